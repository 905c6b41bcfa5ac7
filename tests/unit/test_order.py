"""The runtimes' order (a seeded Williams design), the quiet wait before each timed launch,
and the order-effect check."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from virtbench.analysis.order import order_effects
from virtbench.experiments.order import Predecessors, orders, seed_for, williams
from virtbench.measure.quiet import Quiet


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_williams_each_follows_each_other_equally_often(n):
    rows = williams(n)
    assert all(sorted(r) == list(range(n)) for r in rows)
    pairs = Counter((a, b) for r in rows for a, b in itertools.pairwise(r))
    expected = 1 if n % 2 == 0 else 2
    assert set(pairs) == {(a, b) for a in range(n) for b in range(n) if a != b}
    assert set(pairs.values()) == {expected}


def test_orders_are_seeded_and_balanced_over_names():
    names = ["native", "runc", "crun"]
    a, b = orders(names, 7), orders(names, 7)
    assert a == b and len(a) == 6
    assert orders(names, 8) != a or orders(names, 9) != a
    pairs = Counter((x, y) for r in a for x, y in itertools.pairwise(r))
    assert len(pairs) == 6 and set(pairs.values()) == {2}
    assert seed_for("abc123") == seed_for("abc123") != seed_for("abc124")
    assert seed_for("abc123", 5) == 5


def test_predecessors_are_per_experiment():
    p = Predecessors()
    assert p.take("boot", "crun") == ""
    assert p.take("boot", "runc") == "crun"
    assert p.take("density", "runc") == ""
    assert p.take("boot", "native") == "runc"


def test_quiet_waits_for_a_window_without_other_tasks():
    counts = iter([3, 2, 1, 1, 1, 1, 1, 1, 1, 1] + [1] * 1000)
    q = Quiet(running=lambda: next(counts), window_s=0.003, step_s=0.0005)
    w = q.wait()
    assert w.quiet and w.load == 0 and w.waited_ms >= 3.0


def test_quiet_waits_for_the_previous_instance_to_be_gone():
    gone = iter([False] * 5 + [True] * 1000)
    q = Quiet(running=lambda: 1, settled=lambda: next(gone), window_s=0.002, step_s=0.0005)
    assert q.wait().quiet


def test_a_host_that_never_quietens_is_flagged_not_waited_for_forever():
    q = Quiet(running=lambda: 3, window_s=0.003, step_s=0.0005, timeout_s=0.02)
    w = q.wait()
    assert not w.quiet and w.load == 2 and 20 <= w.waited_ms < 500
    assert w.params() == {"quiet_wait_ms": round(w.waited_ms, 3), "quiet": False, "load": 2}


def test_calibrated_background_load_is_allowed_but_flagged():
    q = Quiet(running=lambda: 2, window_s=0.002, step_s=0.0005, timeout_s=0.5)
    assert q.calibrate(0.01, grace=lambda: 0.004) == 1
    assert q.window_s == 0.008  # two grace periods
    w = q.wait()
    assert w.quiet and w.load == 1  # not stalled, and every such sample says so


def test_order_effect_found_when_injected_and_not_otherwise():
    rng = np.random.default_rng(1)
    fast = [("crun", v) for v in rng.normal(0.7, 0.03, 12)]
    slow = [("runc", v) for v in rng.normal(6.0, 0.3, 12)]  # injected carry-over
    same = [("runc", v) for v in rng.normal(0.7, 0.03, 12)]
    found = order_effects([("native hello", fast + slow), ("crun hello", fast + same)])
    assert [e.group for e in found] == ["native hello"]
    assert "after runc 5.9" in found[0].text() and "after crun 0.71" in found[0].text()


def test_order_effect_needs_enough_values_per_predecessor():
    few = [("crun", 1.0), ("crun", 1.1), ("runc", 9.0), ("runc", 9.5)]
    assert order_effects([("g", few)]) == []


def test_the_window_is_two_grace_periods_within_bounds():
    q = Quiet(running=lambda: 1)
    q.calibrate(0.001, grace=lambda: 0.5)
    assert q.window_s == 0.05
    q.calibrate(0.001, grace=lambda: 0.0001)
    assert q.window_s == 0.003
    q.window_s = 0.02
    q.calibrate(0.001, grace=lambda: None)  # no membarrier: the window stays
    assert q.window_s == 0.02
