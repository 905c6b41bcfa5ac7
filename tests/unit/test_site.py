"""`virtbench site` over fake-runtime stores (tests/fakerun.py) with a known truth: two
testbeds never mix, a trend flags exactly the change injected, a second build writes
nothing and a new run rewrites only what it changes, every link resolves, and every JSON
file validates against the published schema (and Bencher's)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
from tests.fakerun import ENVIRONMENT, fake_run
from tests.schemas import BMF_SCHEMA
from typer.testing import CliRunner

from virtbench import site
from virtbench.cli import app
from virtbench.host import testbed
from virtbench.site import schema
from virtbench.store import Store

runner = CliRunner()
PUBLISHED = Path(__file__).resolve().parents[2] / "schema" / "site.schema.json"
OTHER = {**ENVIRONMENT, "cpu_model": "Other CPU", "cpu_count": 16}
CHANGE_AT = 6  # testbed A's run a6 makes crun 30% slower; nothing else changes
BOTH = ("boot", "density")  # medians, and a cost per instance fitted from a pile-up


def _on(store: Store, run: str, env: dict) -> None:
    store.set_environment(run, {**env, "runtimes": {"runc": "0.0-fake", "crun": "0.0-fake"}})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Ten runs over time on testbed A (crun 1.3x from run a6 on), four on testbed B
    (crun 2x throughout), and a site of them built with two worker processes."""
    root = tmp_path_factory.mktemp("site")
    store = Store(root / "store")
    for i in range(10):
        crun = 1.3 if i >= CHANGE_AT else 1.0
        fake_run(store, f"a{i}", {"runc": 1.0, "crun": crun}, BOTH, n=20, seed=i, name="boot")
    for i in range(4):
        fake_run(store, f"b{i}", {"runc": 1.0, "crun": 2.0}, n=20, seed=50 + i, name="boot")
        _on(store, f"b{i}", OTHER)
    b = site.build(store, root / "store", root / "out", jobs=2)
    return store, root / "out", b


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def test_leaderboards_never_mix_testbeds(built):
    _, out, b = built
    tb_a, tb_b = testbed.testbed_id(ENVIRONMENT), testbed.testbed_id(OTHER)
    assert b.testbeds == 2 and b.runs == 14
    for tb, runs, latest in ((tb_a, "a", "a9"), (tb_b, "b", "b3")):
        [entry] = [p for p in (out / "tb" / tb).iterdir() if p.is_dir()]
        doc = _json(entry / "latest.json")
        assert doc["run"]["id"] == latest and doc["testbed"]["id"] == tb
        page = (entry / "index.html").read_text()
        shown = set(re.findall(r"runs/([ab]\d)\.html", page))
        assert shown == {f"{runs}{i}" for i in range(10 if runs == "a" else 4)}
        board = (out / "tb" / tb / "index.html").read_text()
        assert set(re.findall(r"runs/([ab]\d)\.html", board)) == {latest}
    # B's leaderboard says crun is about 2x runc, A's about 1.3x: each its own machine
    a = _json(out / "runs" / "a9.json")["answers"][0]
    b9 = _json(out / "runs" / "b3.json")["answers"][0]
    ratio = {x["runtime"]: x["vs_best"] for x in a["ranked"]}["crun"]["point"]
    assert a["best"] == "runc" and 1.2 < ratio < 1.4
    ratio = {x["runtime"]: x["vs_best"] for x in b9["ranked"]}["crun"]["point"]
    assert 1.8 < ratio < 2.2


def test_trends_flag_exactly_the_injected_change(built):
    _, out, _ = built
    flagged = set()
    for i in range(10):
        doc = _json(out / "runs" / f"a{i}.json")
        prev = doc["previous"]
        assert (prev is None) == (i == 0)
        for v in prev["verdicts"] if prev else []:
            if v["verdict"] in ("worse", "better", "failed"):
                flagged.add((doc["run"]["id"], v["runtime"], v["metric"]))
    headline = {f for f in flagged if f[2] == "boot.spawn_to_exit"}
    assert headline == {(f"a{CHANGE_AT}", "crun", "boot.spawn_to_exit")}
    assert {f[:2] for f in flagged} == {(f"a{CHANGE_AT}", "crun")}
    page = (out / "tb" / testbed.testbed_id(ENVIRONMENT)).glob("*/index.html")
    text = next(iter(page)).read_text()
    series = text.split('<div class="series">')[1:]
    marked = [block for block in series if 'class="dot flag' in block]
    # crun's time to exit and its memory per instance (a fitted cost), each at a6 only
    assert len(marked) >= 2 and all("<strong>crun</strong>" in b for b in marked), marked
    assert all(b.count('class="dot flag worse"') == 1 for b in marked)
    assert all(re.search(r'flag worse"><title>run a6: ', b) for b in marked)
    assert any("memory per instance" in b for b in text.split("<h4>") if "flag worse" in b)
    assert "a6: worse, 1.3" in text
    # testbed B's first run is not compared with testbed A's last one
    assert _json(out / "runs" / "b0.json")["previous"] is None


def _links(page: Path) -> list[str]:
    class Links(HTMLParser):
        found: list[str] = []

        def handle_starttag(self, tag, attrs):
            for k, v in attrs:
                if k in ("href", "src") and v and not v.startswith(("#", "data:")):
                    self.found.append(v)

    p = Links()
    p.found = []
    p.feed(page.read_text())
    return p.found


def test_every_link_resolves_and_every_json_validates(built):
    _, out, _ = built
    pages = list(out.rglob("*.html"))
    assert len(pages) == 14 + 1 + 2 + 2  # runs, index, testbeds, entries
    for page in pages:
        for link in _links(page):
            assert "://" not in link and not link.startswith("/"), (page, link)
            target = (page.parent / unquote(link.split("#")[0])).resolve()
            assert target.is_file() and out.resolve() in target.parents, (page, link)
    validator = jsonschema.Draft202012Validator(_json(out / "schema" / "site.schema.json"))
    docs = [*out.glob("runs/*[0-9].json"), *out.rglob("latest.json")]
    assert len(docs) == 14 + 2
    for path in docs:
        validator.validate(_json(path))
    for path in out.glob("runs/*.bmf.json"):
        bmf = _json(path)
        jsonschema.validate(bmf, BMF_SCHEMA)
        assert "time to run and exit (hello, crun)" in bmf  # stable names, no run id


def test_published_schema_is_current():
    assert _json(PUBLISHED) == schema.schema(), (
        "schema/site.schema.json is stale: virtbench site --schema > schema/site.schema.json"
    )


def test_a_second_build_writes_nothing_and_a_new_run_only_its_pages(tmp_path):
    store = Store(tmp_path / "store")
    for i in range(3):
        fake_run(store, f"r{i}", {"runc": 1.0, "crun": 1.1}, n=8, seed=i)
    fake_run(store, "o0", {"runc": 1.0, "crun": 1.1}, n=8, seed=9, name="other")
    out = tmp_path / "out"
    site.build(store, tmp_path / "store", out)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    again = site.build(store, tmp_path / "store", out)
    assert again.made == [] and again.written == [] and again.removed == []
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    fake_run(store, "r3", {"runc": 1.0, "crun": 1.1}, n=8, seed=3)
    more = site.build(store, tmp_path / "store", out)
    assert more.made == ["r3"]
    tb = f"tb/{testbed.testbed_id(ENVIRONMENT)}"
    [entry] = [p.name for p in (out / tb).iterdir() if p.name.startswith("fake-")]
    assert set(more.written) == {
        "runs/r3.html",
        "runs/r3.json",
        "runs/r3.bmf.json",
        ".virtbench-site/answers/r3.json",
        "index.html",
        f"{tb}/index.html",
        f"{tb}/{entry}/index.html",
        f"{tb}/{entry}/latest.json",
    }


def test_a_run_that_left_the_store_leaves_the_site(tmp_path):
    full, part = Store(tmp_path / "full"), Store(tmp_path / "part")
    for s in (full, part):
        fake_run(s, "k1", {"runc": 1.0, "crun": 1.1}, n=8, seed=1)
    fake_run(full, "gone1", {"runc": 1.0, "crun": 1.1}, n=8, seed=2, name="gone")
    out = tmp_path / "out"
    site.build(full, tmp_path / "full", out)
    assert (out / "runs" / "gone1.html").is_file()
    b = site.build(part, tmp_path / "part", out)
    assert {"runs/gone1.html", "runs/gone1.json", "runs/gone1.bmf.json"} <= set(b.removed)
    assert not list(out.rglob("gone1*")) and not list(out.glob("tb/*/gone-*"))
    assert (out / "runs" / "k1.html").is_file()


def test_runs_without_facts_fleet_hosts_and_running_runs(tmp_path):
    store = Store(tmp_path / "store")
    for i, host in enumerate(("h1", "h2")):
        fake_run(store, f"f{i}", {"runc": 1.0, "crun": 1.1}, n=8, seed=i, host=host, fleet="fl")
    for i in range(2):
        fake_run(store, f"u{i}", {"runc": 1.0, "crun": 1.1}, n=8, seed=5 + i, name="old")
        store.set_environment(f"u{i}", {})
    store.create_run("going", "boot", ["virtbench", "run"], {"name": "boot"})
    out = tmp_path / "out"
    b = site.build(store, tmp_path / "store", out)
    assert b.running == 1 and b.runs == 4 and not (out / "runs" / "going.html").exists()
    tb = out / "tb" / testbed.testbed_id(ENVIRONMENT)
    names = sorted(p.name.rsplit("-", 1)[0] for p in tb.iterdir() if p.is_dir())
    assert names == ["fake-on-h1", "fake-on-h2"]  # one entry per fleet host
    assert _json(out / "runs" / "u1.json")["previous"] is None  # unknown machines: no flags
    assert "recorded no machine facts" in (out / "tb" / "unrecorded" / "index.html").read_text()
    assert "1 run still running is left out" in (out / "index.html").read_text()


def test_a_directory_of_other_files_is_refused(tmp_path):
    store = Store(tmp_path / "store")
    fake_run(store, "k1", {"runc": 1.0, "crun": 1.1}, n=8)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    res = runner.invoke(app, ["site", str(tmp_path / "mine"), "--results", str(tmp_path / "store")])
    assert res.exit_code != 0 and "did not write" in res.output
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]


def test_the_command(tmp_path):
    store = Store(tmp_path / "store")
    for i in range(2):
        fake_run(store, f"k{i}", {"runc": 1.0, "crun": 1.1}, n=8, seed=i)
    args = ["site", str(tmp_path / "out"), "--results", str(tmp_path / "store"), "-j", "2"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    said = " ".join(res.output.split())  # as the terminal wrapped it, wherever it did
    assert "site: 2 runs on 1 testbed" in said and "made 2 runs' files" in said
    res = runner.invoke(app, ["site", "--schema"])
    assert json.loads(res.stdout) == schema.schema()
    res = runner.invoke(app, [*args[:-1], "0"])
    assert res.exit_code != 0 and "--jobs" in res.output
    res = runner.invoke(app, ["site", str(tmp_path / "o2"), "--results", str(tmp_path / "none")])
    assert res.exit_code != 0 and "no results store" in res.output
    res = runner.invoke(app, ["site", "--results", str(tmp_path / "store")])
    assert res.exit_code != 0 and "give the directory" in res.output


def test_a_store_without_finished_runs_is_a_site_that_says_so(tmp_path):
    store = Store(tmp_path / "store")
    store.create_run("going", "boot", ["virtbench", "run"], {"name": "boot"})
    b = site.build(store, tmp_path / "store", tmp_path / "out")
    assert b.runs == 0 and b.running == 1
    text = (tmp_path / "out" / "index.html").read_text()
    assert "no finished run yet" in text and "1 run still running is left out" in text


def test_a_build_stopped_midway_is_finished_by_the_next(tmp_path, monkeypatch):
    store = Store(tmp_path / "store")
    for i in range(3):
        fake_run(store, f"k{i}", {"runc": 1.0, "crun": 1.1}, n=8, seed=i)
    made = site.work.make

    def stops_at_the_second(s, task):
        if task.run == "k1":
            raise KeyboardInterrupt
        return made(s, task)

    monkeypatch.setattr(site.work, "make", stops_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        site.build(store, tmp_path / "store", tmp_path / "out")
    assert (tmp_path / "out" / "runs" / "k0.html").is_file()
    monkeypatch.setattr(site.work, "make", made)
    b = site.build(store, tmp_path / "store", tmp_path / "out")
    assert b.made == ["k1", "k2"]  # k0's files were recorded as made
    assert (tmp_path / "out" / "index.html").is_file()


def test_a_run_page_is_its_report(tmp_path):
    """The page the site makes for a run is what `virtbench report RUN` writes (but for
    the time it was made, the site's links above it, and its figures drawn without
    matplotlib where a type has them so: the same figures, under the same captions)."""
    store = Store(tmp_path / "store")
    fake_run(store, "k1", {"native": 1.0, "runc": 1.2, "crun": 1.1}, ("boot", "density"), n=8)
    site.build(store, tmp_path / "store", tmp_path / "out")
    res = runner.invoke(
        app, ["report", "k1", "-o", str(tmp_path / "r.html"), "--results", str(tmp_path / "store")]
    )
    assert res.exit_code == 0, res.output

    def plain(text: str) -> str:
        text = re.sub(r'<nav class="site">.*?</nav>\n', "", text)
        text = re.sub(r"<figure><svg.*?(<figcaption>)", r"<figure>\1", text, flags=re.S)
        return re.sub(r"virtbench 0[^,]*, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.", "", text)

    page = (tmp_path / "out" / "runs" / "k1.html").read_text()
    report = (tmp_path / "r.html").read_text()
    assert '<nav class="site">' in page and "Fastest to start" in page
    assert plain(page) == plain(report)
    assert page.count("<figure><svg") == report.count("<figure><svg") >= 3
    assert "Matplotlib" in report and page.count("Matplotlib") < report.count("Matplotlib")


def test_a_trend_never_draws_or_says_a_figure_below_what_it_can_be():
    from virtbench.site import trend

    s = trend.Series("memory per instance (sleep)", "crun", "KiB", False, 0.0)
    s.points = [
        trend.Point("r1", 1.0, 316.0, -8.4, 641.0, True),
        trend.Point("r2", 2.0, 300.0, 250.0, 350.0, True),
        trend.Point("r3", 3.0, 310.0, 290.0, 330.0, False),
    ]
    assert trend.interval(s, s.points[0]) == "up to 641 KiB (not told from 0)"
    assert trend.interval(s, s.points[1]) == "95% CI 250-350 KiB"
    assert trend.interval(s, s.points[2]) == "range 290-330 KiB"
    drawn = trend.svg(s, 3, {"r1": 0, "r2": 1, "r3": 2})
    assert "-8" not in drawn and ">0 KiB<" in drawn  # the axis starts at the floor, in KiB
    assert max(float(y) for y in re.findall(r'y[12]="([\d.]+)"', drawn)) <= trend.H


def test_a_first_build_killed_before_its_manifest_is_redone_not_refused(tmp_path):
    from virtbench.site.files import Files

    killed = Files(tmp_path / "out")  # SIGKILL after a page: finish() never runs
    killed.write("runs/x.html", "<p>x</p>")
    again = Files(tmp_path / "out")  # the directory is still the site's
    assert again.old == {} and not again.fresh("runs/x.html", "any")
    again.write("runs/x.html", "<p>x</p>")
    again.finish()
    assert (tmp_path / "out" / "runs" / "x.html").read_text() == "<p>x</p>"
    assert not list((tmp_path / "out").rglob("*.tmp*"))


def test_an_entry_page_orders_trends_as_the_answers_and_says_once_nothing_is_compared(tmp_path):
    """One run of boot and density: the page leads with its answers; its trends in the
    answers' order (time to start before memory), and one line saying nothing is compared
    yet, not "no change flagged" on each chart."""
    store = Store(tmp_path / "store")
    fake_run(store, "one001", {"runc": 1.0, "crun": 1.1}, ("boot", "density"), n=8)
    res = runner.invoke(app, ["site", str(tmp_path / "out"), "--results", str(tmp_path / "store")])
    assert res.exit_code == 0, res.output
    (page,) = [p for p in (tmp_path / "out").rglob("index.html") if "Trends" in p.read_text()]
    lead, text = page.read_text().split("<h2>Trends</h2>", 1)
    # it leads with the latest run's answers, before its runs and trends
    head = lead.split("<h2>Runs</h2>", 1)[0]
    assert "latest run's answers" in head and "Fastest to start: time to run and exit" in head
    assert "faster than" in head  # runc against crun, 1.1x: a sentence
    assert text.count("One run so far: nothing is compared yet") == 1
    assert "no change flagged" not in text
    assert text.index("time to run and exit") < text.index("memory per instance")
