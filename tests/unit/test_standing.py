"""Answers against the best: a known difference injected through the fake runtime is
recovered as a ratio whose 95% CI holds it, said in a sentence only where that CI
excludes no difference; native is the reference line, not a contestant."""

from __future__ import annotations

import math

from rich.console import Console
from tests.fakerun import fake_run

from virtbench.report.answers import answers
from virtbench.report.findings import from_rich
from virtbench.report.standing import Answer, Standing, table, times
from virtbench.store import Store


def by_question(store: Store, run_id: str) -> dict[str, Answer]:
    return {a.question: a for a in answers(store.frame(run_id))}


def test_an_injected_1_5x_is_inside_the_ratios_ci_and_said_once(tmp_path):
    """b is made 1.5x slower than a (boot) and 1.5x costlier per instance (density)."""
    store = Store(tmp_path)
    fake_run(store, "r15", {"a": 1.0, "b": 1.5}, ("boot", "density"), n=20, seed=3)
    found = by_question(store, "r15")
    start = found["Fastest to start"]
    assert [s.runtime for s in start.ranked] == ["a", "b"]
    f = start.factor(*start.ranked)
    assert f.low < 1.5 < f.high and f.low > 1.0, f  # the truth inside, 1 outside
    assert start.sentences() == [f"a starts {times(f)} faster than b"]
    memory = found["Least memory per instance"]
    m = memory.factor(*memory.ranked)
    assert m.low < 1.5 < m.high, m
    # the table says the same: b's cell against the best
    rows = from_rich(table(start)).rows
    assert rows[0][3] == "best" and rows[1][3] == times(f)


def test_no_sentence_where_the_ratios_ci_includes_1(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "same", {"a": 1.0, "b": 1.0}, ("boot",), n=20, seed=5)
    start = by_question(store, "same")["Fastest to start"]
    f = start.factor(*start.ranked)
    assert f.low < 1.0 < f.high, f
    assert start.sentences() == [] and "could be chance" in start.undecided()


def test_native_is_the_reference_line_and_each_runtime_says_its_multiple_of_it(tmp_path):
    """crun 1.3x and runc 2x a native of 1 (fakerun's factors): ranked crun, runc; native
    apart; x native holds 1.3 and 2."""
    store = Store(tmp_path)
    fake_run(store, "ref", {"native": 1.0, "runc": 2.0, "crun": 1.3}, ("boot",), n=20, seed=7)
    start = by_question(store, "ref")["Fastest to start"]
    assert [s.runtime for s in start.ranked] == ["crun", "runc"]
    assert start.reference is not None and start.reference.runtime == "native"
    for s, truth in zip(start.ranked, (1.3, 2.0), strict=True):
        x = start.of_reference(s)
        assert x.low < truth < x.high, (s.runtime, x)
    rows = from_rich(table(start)).rows
    assert rows[-1][0] == "native (reference)" and rows[0][3] == "best"
    # --baseline: every runtime against the one named
    start.baseline = "runc"
    rows = from_rich(table(start)).rows
    assert rows[1][3] == "baseline" and rows[0][3].startswith("0.6")  # crun 1.3 / runc 2


def test_no_ratio_to_a_figure_within_resolution_of_zero():
    a = Answer(
        "Least memory per instance",
        "memory per instance",
        "MiB",
        [Standing("x", 0.0, 0.0, 0.0), Standing("y", 4.0, 3.5, 4.5)],
        metric="density.pss",
    )
    f = a.factor(*a.ranked)
    assert math.isnan(f.point) and "a ratio to it means nothing" in f.why


def test_a_difference_scale_answer_says_points_not_times():
    a = Answer(
        "Least slowed by a neighbour",
        "inserts/s (sqlite), the worst attack",
        "% slower",
        [Standing("a", 5.0, 3.0, 7.0), Standing("b", 40.0, 35.0, 45.0)],
        scale="difference",
    )
    f = a.factor(*a.ranked)
    assert f.point == 35.0 and f.low > 0
    assert a.sentences() == ["a is 35 points (29.6-40.4) better than b"]  # half-widths 2, 5
    console = Console(width=80, record=True)
    console.print(table(a))
    assert "+35 points" in console.export_text()
