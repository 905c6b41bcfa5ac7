"""What a run's report says first: its answers (the memory question ranked by its
sharpest sound estimate) and the warnings a reader weighs before the results."""

from __future__ import annotations

import re

import numpy as np

from virtbench.store import Sample


def pile_sample(runtime: str, metric: str, value: float, background: int) -> Sample:
    """A density figure (MiB) of one pile-up's instance or step `background`."""
    return Sample(
        experiment="density",
        metric=metric,
        value=float(value),
        unit="MiB",
        direction="lower",
        runtime=runtime,
        workload="sleep",
        repetition=0,
        background=background,
    )


def test_warnings_are_few_and_each_changes_a_reading(tmp_path):
    """A run with spread in many groups and routine notes: the spread is one line naming
    the three widest groups and what narrows them; a note that only confirms a target is
    the run's note, not a warning; at most five come before the results."""
    from tests.fakerun import fake_run

    from virtbench.report import html
    from virtbench.report.findings import run_notes, warnings
    from virtbench.store import Store

    store = Store(tmp_path)
    factors = {"runc": 1.0, "crun": 1.0, "native": 1.0, "docker": 1.2}
    fake_run(store, "warn01", factors, ("boot", "density", "throughput"), cv=0.5)
    events = [
        (0.0, "info", "density: crun run 1: stopped at 30 instances (reached the target of 30)"),
        (0.0, "warning", "host noise: 3 task(s) of other work kept a CPU busy"),
    ]
    found = warnings(store.frame("warn01"), events, cv_warn=0.10)
    spread = [t for _, t in found if t.startswith("high spread")]
    assert len(spread) == 1 and spread[0].count("(CV ") == 4, spread  # "(CV above" and 3
    assert "--target-cv" in spread[0]
    assert not any("reached the target" in t for _, t in found)
    assert run_notes(events) == [events[0][2]]
    run = store.run("warn01")
    shown = html._warnings(run, store.frame("warn01"), events, 0.10)
    assert len(shown["warnings"]) <= html.FIRST_WARNINGS
    assert shown["warnings"] + shown["more_warnings"] == html.ranked(found)


def test_the_memory_question_is_ranked_by_its_sharpest_sound_estimate():
    """One pile-up of two steps gives the host's cost per instance no CI; the cgroup
    memory of 30 instances each separates the two runtimes with tight CIs, their PSS with
    wide ones: the answer ranks by cgroup memory, decides fa over fb, and says why not the
    others."""
    from virtbench.report.views.density import answers
    from virtbench.store.frame import as_frame

    rng = np.random.default_rng(3)
    smp = pile_sample
    samples = []
    for rt, cg in (("fa", 1.0), ("fb", 2.0)):
        samples += [smp(rt, "density.host_used", 900 + n * cg * 1.5, n) for n in (0, 30)]
        samples += [
            smp(rt, "density.cgroup_memory", cg + 0.01 * rng.random(), i) for i in range(30)
        ]
        samples += [smp(rt, "density.pss", 0.5 + 0.4 * rng.random(), i) for i in range(30)]
    (a,) = answers(as_frame(samples))
    assert a.metric == "density.cgroup_memory" and [s.runtime for s in a.ranked] == ["fa", "fb"]
    assert a.sentences() and a.sentences()[0].startswith("fa needs 2")
    assert "ranked by cgroup memory of each instance, the sharpest estimate here" in a.note
    assert "the host's memory in use per instance: not every runtime's figure has a CI" in a.note
    assert "PSS of each new instance: counts less than cgroup memory" in a.note


def test_a_narrow_estimate_that_leaves_memory_out_does_not_rank_the_answer():
    """make demo's case: crun's and runc's PSS (a sleeper's 12 KiB each) have the
    narrowest CIs but leave out the kernel's side that their cgroup memory counts (256
    and 734 KiB): the answer ranks by cgroup memory and decides crun over runc."""
    from virtbench.report.views.density import answers
    from virtbench.store.frame import as_frame

    rng = np.random.default_rng(5)
    samples = []
    for rt, cg in (("crun", 0.25), ("runc", 0.72)):
        samples += [
            pile_sample(rt, "density.cgroup_memory", cg + 0.08 * rng.random(), i) for i in range(30)
        ]
        samples += [
            pile_sample(rt, "density.pss", 0.0117 + 1e-4 * rng.random(), i) for i in range(30)
        ]
    (a,) = answers(as_frame(samples))
    assert a.metric == "density.cgroup_memory", a.note
    assert a.sentences() and a.sentences()[0].startswith("crun needs"), a.sentences()
    assert "PSS of each new instance: counts less than cgroup memory" in a.note


def test_a_memory_answer_with_a_runtime_within_resolution_is_decided_by_how_much():
    """crun's cgroup memory sits at one charge batch (0.244 MiB, within the method's 0.25),
    runc's at 0.67: no ratio means anything, the difference does, with its CI."""
    from virtbench.report.views.density import answers
    from virtbench.store.frame import as_frame

    rng = np.random.default_rng(4)
    samples = [
        pile_sample(rt, "density.cgroup_memory", base + 0.01 * rng.random(), i)
        for rt, base in (("crun", 0.240), ("runc", 0.66))
        for i in range(30)
    ]
    (a,) = answers(as_frame(samples))
    assert a.scale == "difference" and [s.runtime for s in a.ranked] == ["crun", "runc"]
    (said,) = a.sentences()
    # in the tables' unit: 420 KiB, never 0.41 MiB beside a table of KiB
    assert re.match(r"crun needs 4\d\d KiB \(\d+-\d+\) less memory per instance", said), said


def test_numbers_read_as_people_write_them_in_every_section(tmp_path):
    """p values "< 0.001" (never 0.0000000000203), DESMET's baseline figure in the tables'
    units, the bands as "60%", the glossary without code marks and in the tables' units."""
    import re

    from tests.fakerun import fake_run
    from typer.testing import CliRunner

    from virtbench.cli import app
    from virtbench.report.cells import p_text
    from virtbench.store import Store

    assert p_text(2.03e-11) == "< 0.001" and p_text(0.0123) == "0.012"
    store = Store(tmp_path)
    kinds = ("boot", "density", "throughput")
    fake_run(store, "nums01", {"native": 1.0, "crun": 1.3, "runc": 1.6}, kinds)
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", "nums01", "-o", str(out), "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = re.sub(
        r"<svg.*?</svg>|<pre>.*?</pre>|<style>.*?</style>", "", out.read_text(), flags=re.S
    )
    assert not re.search(r">0\.000\d", page), "a p value in more digits than it means"
    assert "&lt; 0.001" in page and "60%, 70%, 80%, 90%" in page and "60.0" not in page
    glossary = page[page.index("What the figures mean") : page.index("Appendix")]
    assert "`" not in glossary and "KiB, MiB, GiB" in glossary
