"""The HTML report of fake-runtime runs (tests/fakerun.py): self-contained, every section
present, DESMET scores and answers as injected, flags validated, every string escaped
(the plots themselves: test_report_figures.py)."""

from __future__ import annotations

import re

import pytest
from tests.fakerun import fake_run
from typer.testing import CliRunner

from virtbench.cli import app
from virtbench.report import sections
from virtbench.store import Sample, Store

runner = CliRunner()
ALL = ("boot", "density", "throughput", "scalability", "isolation")


def test_report_is_self_contained_with_every_section(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"native": 1.0, "crun": 1.05, "runsc": 1.6}, ALL)
    fake_run(store, "bbbbb2", {"native": 1.0, "crun": 1.0}, ("boot",), seed=4)
    out = tmp_path / "r.html"
    res = runner.invoke(
        app,
        [
            "report",
            "aaaaa1",
            "bbbbb2",
            "-o",
            str(out),
            "--results",
            str(tmp_path),
            "--plots",
            str(tmp_path / "p"),
        ],
    )
    assert res.exit_code == 0, res.output
    page = out.read_text()
    for part in (
        "Run aaaaa1",
        "Run bbbbb2",
        "Environment",
        "Before you trust",
        "Spec (TOML)",
        "differences between runtimes",
        "DESMET scores",
        "Kruskal-Wallis",
    ):
        assert part in page, part
    assert page.count("<svg") == 14  # eleven plots of the first run, three of the second
    assert "placement smt-sibling skipped: no SMT" in page  # events are warnings
    assert "failed measurement(s), e.g. pgbench: connection refused" in page
    assert "outliers" in page  # the wide table
    # nothing fetched: no script, stylesheet, image or font from anywhere
    assert "<script" not in page and not re.search(r'(src|href)="(https?:)?//', page)
    assert "url(http" not in page and "@import" not in page
    assert (tmp_path / "p" / "aaaaa1" / "density-memory-per-instance.svg").exists()

    # DESMET against native: crun is 1.05x slower (95% of native's throughput: 4 points,
    # 105% of its latency-like figures: 4), runsc 1.6x (62.5%: 1 point; 160%: 0)
    def scores(measure: str) -> list[str]:
        row = re.search(rf"<td>{re.escape(measure)}</td><td>[a-z]+</td>(.*?)</tr>", page, re.S)
        assert row, measure
        return re.findall(r'<td class="num">([^<]*)</td>', row.group(1))[2:]  # past base, weight

    assert scores("inserts/s (sqlite)") == ["4", "1"]
    assert scores("PSS of each new instance (sleep)") == ["4", "0"]
    assert scores("memory per instance") == ["4", "0"]  # slopes: 4.2 and 6.4 MiB against 4
    assert "Boot is not scored against native" in page  # no boot rows against a process
    assert "time to run and exit (hello)</td><td>boot" not in page
    res = runner.invoke(
        app,
        ["report", "aaaaa1", "-o", str(out), "--results", str(tmp_path), "--global-test", "anova"],
    )
    assert res.exit_code == 0 and "ANOVA + Tukey HSD" in out.read_text()


def test_desmet_sums_a_swept_measure_over_its_levels_and_weighs_features(tmp_path):
    """postgres tps at three client counts is one feature: its levels' sum and mean; the
    weighted mean counts each feature once, as its weight says."""
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"native": 1.0, "crun": 1.05, "runsc": 1.6}, ALL)
    out = tmp_path / "r.html"

    def row(page: str, measure: str) -> list[str]:
        m = re.search(rf"<td>{re.escape(measure)}</td>(.*?)</tr>", page, re.S)
        assert m, measure
        return re.findall(r'<td class="num">([^<]*)</td>', m.group(1))

    base = ["report", "aaaaa1", "-o", str(out), "--results", str(tmp_path)]
    assert runner.invoke(app, base).exit_code == 0
    page = out.read_text()
    scored = re.findall(r"<td>(transactions/s at \d+) \(postgres\)</td><td>higher</td>", page)
    assert sorted(scored) == [f"transactions/s at {n}" for n in (1, 16, 4)]  # DESMET rows
    per_level = [row(page, f"{lv} (postgres)</td><td>higher")[-2:] for lv in scored]
    sums = [sum(int(r[i]) for r in per_level) for i in (0, 1)]  # crun, runsc
    assert row(page, "transactions/s (postgres): sum over 3 levels")[-2:] == [str(x) for x in sums]
    mean = row(page, "transactions/s (postgres): mean over levels (counts once)")
    assert mean[1] == "1" and [float(x) for x in mean[-2:]] == pytest.approx(
        [x / 3 for x in sums], abs=0.005
    )  # weight 1, then the mean of each runtime's three level scores
    res = runner.invoke(app, [*base, "--desmet-weights", "inserts_per_s*=1,*=0"])
    assert res.exit_code == 0, res.output
    weighted = row(out.read_text(), "weighted mean score")[-2:]
    assert [w.split(" ")[0] for w in weighted] == ["4.00", "1.00"], weighted  # inserts alone
    res = runner.invoke(app, [*base, "--desmet-weights", "boot.*=two"])
    assert (
        res.exit_code == 2 and "--desmet-weights: 'boot.*=two' is not pattern=weight" in res.output
    )


def test_desmet_scores_nothing_against_a_baseline_below_resolution(tmp_path):
    """An instance that costs nothing measurable is no baseline: no score is a ratio to
    it, and the table says so, one line each."""
    store = Store(tmp_path)
    fake_run(store, "ccccc3", {"native": 0.0, "crun": 1.0}, ("density",))
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", "ccccc3", "-o", str(out), "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert "PSS of each new instance (sleep) not scored: native&#39;s median is 0 KiB" in page
    assert "memory per instance not scored: native&#39;s slope is below the method&#39;s" in page
    scores = page[page.index("DESMET scores") :]
    assert "<td>memory per instance</td>" not in scores[: scores.index("</table>")]


def test_report_flags_name_what_to_fix(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"native": 1.0})
    base = ["report", "aaaaa1", "--results", str(tmp_path), "-o", str(tmp_path / "r.html")]
    res = runner.invoke(app, [*base, "--baseline", "docker"])
    assert res.exit_code == 2 and "--baseline: no 'docker' samples" in res.output
    res = runner.invoke(app, [*base, "--boot-baseline", "qemu"])
    assert res.exit_code == 2 and "--boot-baseline: no 'qemu' samples" in res.output
    res = runner.invoke(app, [*base, "--bands-higher", "60,70"])
    assert res.exit_code == 2 and "--bands-higher: give four percentages" in res.output
    res = runner.invoke(app, [*base, "--global-test", "t"])
    assert res.exit_code == 2 and "--global-test: 't' is not one of kruskal, anova" in res.output
    res = runner.invoke(app, ["report", "latest", "--results", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "no results store in" in res.output
    res = runner.invoke(app, ["report", "zzzzz9", "--results", str(tmp_path)])
    assert res.exit_code == 2 and "run 'zzzzz9' not found" in res.output
    assert not (tmp_path / "r.html").exists()


HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>{{ 7*7 }}&amp;'


def test_report_escapes_every_string_from_the_store(tmp_path):
    """Strings that reach the page from a store (a run's name, its runtime labels, the
    environment, artifact names, events, failed samples' errors with an instance's
    console output) are text, never markup: a store from elsewhere cannot inject any."""
    store = Store(tmp_path)
    rt = "crun<b onmouseover=alert(3)>"
    rid = fake_run(store, "ccccc3", {"native": 1.0, rt: 1.1}, ALL, name=f"n{HOSTILE}")
    store.set_environment(
        rid, {**store.run(rid).environment, "hostname": HOSTILE, "kernel": HOSTILE}
    )
    store.add_artifact(rid, {"name": HOSTILE, "digest": "e" * 64, "disk_bytes": 1})
    store.add_event(rid, "warning", f"isolation: {HOSTILE}")
    store.add_sample(
        rid,
        Sample(
            experiment="boot",
            metric="boot.spawn_to_exit",
            value=None,
            unit="ms",
            direction="lower",
            runtime=rt,
            workload="hello",
            repetition=99,
            error=f"console: {HOSTILE}",
        ),
    )
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", rid, "-o", str(out), "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    for markup in ("<script", "<img", "<b onmouseover"):
        assert markup not in page, markup
    assert "}}&amp;amp;" in page and "&amp;amp;amp;" not in page  # escaped once, not twice
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    assert page.count("{{ 7*7 }}") >= 5  # name, hostname, kernel, artifact, event: as text
    assert "crun&lt;b onmouseover=alert(3)&gt;" in page
    # the plots inline as SVG: their text is escaped too
    for svg in re.findall(r"<svg.*?</svg>", page, re.S):
        assert "<b " not in svg and "<script" not in svg


def test_a_desmet_weight_matches_a_rows_name_or_its_metrics_full_name():
    from virtbench.report.desmet import desmet_weight

    weights = {"boot.*": 2.0, "*tps*": 3.0}
    assert desmet_weight("spawn_to_exit (hello)", weights, "boot.spawn_to_exit") == 2.0
    assert desmet_weight("read_only.tps (mariadb)", weights, "read_only.tps") == 3.0
    assert desmet_weight("pss (sleep)", weights, "density.pss") == 1.0


def test_the_report_leads_with_answers_ranked_as_injected(tmp_path):
    """Runtimes made 1.0x, 1.3x and 2.0x slower (tests/fakerun.py): every answer ranks
    them in that order, the clearly apart ones with ">", and the report shows the
    answers before the details; routine notes past three of a kind are counted."""
    from tests.fakerun import fake_run

    from virtbench.report.answers import answers
    from virtbench.report.findings import ranked

    st = Store(tmp_path)
    fake_run(
        st,
        "ans001",
        {"slow": 2.0, "fast": 1.0, "mid": 1.3},
        ("boot", "density", "isolation", "scalability"),
        n=12,
    )
    found = {a.question: a for a in answers(st.frame("ans001"))}
    assert {"Fastest to start", "Least memory per instance"} <= set(found)
    for q in ("Fastest to start", "Least memory per instance"):
        a = found[q]
        assert [s.runtime for s in a.ranked] == ["fast", "mid", "slow"], a.sentences()
        assert len(a.sentences()) == 2, a.sentences()  # each neighbour told apart
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", "ans001", "-o", str(out), "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert page.index("<h3>Answers</h3>") < page.index("<h4>Environment</h4>")
    assert page.index("<h3>Answers</h3>") < page.index(">Startup time</h3>")
    notes = [("info", f"high spread: group {i}") for i in range(6)] + [("error", "cleanup: x")]
    got = ranked(notes)
    assert got[0] == ("error", "cleanup: x") and len(got) == 5
    assert got[-1] == ("info", "high spread, also: group 3; group 4; group 5")  # each named


def test_an_answer_whose_interval_reaches_below_what_can_be_says_at_most():
    """Memory per instance cannot be negative: a slope whose 95% CI reaches below 0 is
    shown as at most its upper bound, never a point with a negative low end, and no
    ratio is taken to it."""
    from virtbench.report.findings import from_rich
    from virtbench.report.standing import Answer, Standing, notes, table

    a = Answer(
        "Least memory per instance",
        "memory per instance",
        "MiB",
        [Standing("runc", 0.0266, -1.49, 1.55, 0.0), Standing("crun", 0.342, 0.169, 0.515, 0.0)],
        metric="density.host_cost",
    )
    rows = from_rich(table(a)).rows
    assert rows[0][:4] == ["runc", "27.2 KiB", "up to 1.55 MiB (not told from 0)", "best"]
    assert rows[1][:4] == ["crun", "350 KiB", "173-527 KiB", "n/a"]
    assert a.sentences() == [] and "runc's figure is not told from 0" in notes(a)
    under = Standing("runc", -0.0096, -1.49, 5.81, 0.0)  # a slope under 0
    a = Answer("Least memory per instance", "memory per instance", "MiB", [under], metric="m")
    rows = from_rich(table(a)).rows
    assert rows[0][:3] == ["runc", "< 5.81 MiB", "up to 5.81 MiB (not told from 0)"], rows


# Axis labels that need no unit: a count, a share, a category.
UNITLESS = (
    "fraction of",
    "instances running",
    "background instances",
    "pages touched",
    "level",
    "instances launched at once",
)


def test_the_report_reads_as_words_and_every_axis_has_its_unit(tmp_path):
    """No JSON, Python list or snake_case key a person would read (the spec's TOML, the
    command and the figures' definitions aside); no registry id as a label; every plot's
    axes labelled, with its unit."""
    import html as htmlmod

    store = Store(tmp_path)
    fake_run(store, "words1", {"native": 1.0, "crun": 1.2, "runsc": 1.8}, ALL, n=8)
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", "words1", "-o", str(out), "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    for drop in (r"<svg.*?</svg>", r"<pre>.*?</pre>", r"<code>.*?</code>", r"<style>.*?</style>"):
        page = re.sub(drop, "", page, flags=re.S)
    glossary = page[page.index("What the figures mean") : page.index("Appendix")]
    read = htmlmod.unescape(re.sub(r"<[^>]+>", " ", page.replace(glossary, "")))
    assert not re.search(r"\{\"|\[\d+, \d+|\['|': '", read), "JSON or a Python list"
    assert not re.findall(r"\b[a-z0-9]+_[a-z0-9_]+\b", read), "a snake_case key"
    assert "boot.spawn_to_exit" not in read and "density.host_cost" not in read
    assert "time to run and exit" in read and "memory per instance" in read
    for p in sections.figures(store.samples("words1"), ["native", "crun", "runsc"]):
        for ax in p.fig.axes:
            labels = [x for x in (ax.get_xlabel(), ax.get_ylabel()) if x]
            assert labels, p.name  # a value axis says what it is
            for text in labels:
                assert text.endswith(")") or text.startswith(UNITLESS), (p.name, text)
        p.close()


def test_a_runtime_measured_under_emulation_is_marked_wherever_an_answer_names_it():
    """A figure measured under QEMU TCG beside ones measured on the hardware says that it
    works, not how fast: its name carries "(emulated)" in the table and the sentences,
    and the answer's notes say what that means."""
    from virtbench.report.findings import from_rich
    from virtbench.report.standing import Answer, Standing, notes, table

    a = Answer(
        "Fastest to start",
        "time to run and exit",
        "ms",
        [Standing("crun", 17.3, 17.2, 17.7), Standing("osv", 2350.0, 2281.0, 2439.0)],
        emulated=frozenset({"osv"}),
    )
    rows = from_rich(table(a)).rows
    assert [r[0] for r in rows] == ["crun", "osv (emulated)"]
    assert a.sentences() == ["crun is 136x (131-141) better than osv (emulated)"], a.sentences()
    assert any(n.startswith("emulated (QEMU TCG): osv: ") for n in notes(a)), notes(a)
    plain = Answer("Fastest to start", "t", "ms", a.ranked)  # nothing emulated: no mark
    assert [r[0] for r in from_rich(table(plain)).rows] == ["crun", "osv"]
    assert not any("emulated" in n for n in notes(plain))
