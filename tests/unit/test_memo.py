"""Results kept by value (analysis/memo.py): equal values give the kept result, other
values their own, and a kept interval is the one worked out afresh."""

from __future__ import annotations

import numpy as np

from virtbench.analysis import stats
from virtbench.analysis.memo import by_value


def test_equal_values_give_the_kept_result_and_others_their_own() -> None:
    calls = []

    @by_value(2)
    def total(values: np.ndarray, scale: float) -> float:
        calls.append(1)
        return float(values.sum() * scale)

    v = np.arange(4.0)
    assert total(v, 2.0) == total(v.copy(), 2.0) == 12.0
    assert len(calls) == 1
    assert total(v, 3.0) == 18.0 and total(v.astype(np.float32), 2.0) == 12.0
    assert total(v[::-1].copy(), 2.0) == 12.0  # other bytes: worked out
    assert len(calls) == 4
    total(v, 2.0)  # pushed out by the last two (size 2): worked out again
    assert len(calls) == 5


def test_a_kept_interval_is_the_one_worked_out_afresh() -> None:
    v = np.random.default_rng(1).normal(10, 1, 60)
    unit = np.repeat(np.arange(12), 5)
    kept = stats.ci_of(v, unit=unit)
    fresh = stats.ci_of.__wrapped__(v, unit=unit)
    assert kept == fresh == stats.ci_of(v.copy(), unit=unit.copy())
    assert stats.ci_of(v * 2, unit=unit) != kept
