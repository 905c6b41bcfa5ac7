"""Whether the order runtimes were measured in changed the figures.

Every timed sample records its `predecessor` (the runtime measured just before it in the
same experiment, "" for the first) in its params. `order_effects` tests, per group of
samples, whether the predecessor explains a difference (Kruskal-Wallis over the groups
of at least MIN_PER_PREDECESSOR values, Holm-corrected over all groups tested); a
significant one is reported with the medians after each predecessor.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from virtbench.analysis.significance import holm

MIN_PER_PREDECESSOR = 4
ALPHA = 0.05
MIN_EFFECT = 0.10  # a predecessor must move the median by at least 10%: with many
# values the test's p alone would flag tiny, steady shifts


@dataclass(frozen=True)
class OrderEffect:
    """A group whose figures depend on what ran before it."""

    group: str  # e.g. "boot.spawn_to_exit (hello) on native"
    p: float  # Holm-adjusted
    medians: dict[str, tuple[float, int]]  # predecessor -> (median, n)

    def text(self) -> str:
        after = ", ".join(
            f"after {k or '(first)'} {m:.3g} (n={n})" for k, (m, n) in self.medians.items()
        )
        return (
            f"order effect: {self.group} depends on the runtime measured before it "
            f"({after}; {'p < 0.001' if self.p < 0.001 else f'p = {self.p:.2g}'})"
        )


def order_effects(
    groups: Iterable[tuple[str, list[tuple[str, float]]]],
    alpha: float = ALPHA,
    min_effect: float = MIN_EFFECT,
) -> list[OrderEffect]:
    """Groups (name, [(predecessor, value)...]) whose predecessor explains a significant
    difference of at least `min_effect` between the highest and lowest median."""
    tested: list[tuple[str, dict[str, list[float]], float]] = []
    for name, pairs in groups:
        by: dict[str, list[float]] = defaultdict(list)
        for pred, value in pairs:
            if value is not None and math.isfinite(value):
                by[pred].append(value)
        by = {k: v for k, v in by.items() if len(v) >= MIN_PER_PREDECESSOR}
        if len(by) < 2:
            continue
        pooled = [v for vs in by.values() for v in vs]
        if len(set(pooled)) < 2:
            continue
        from scipy import stats as sps  # only when there is something to test: slow import

        p = float(sps.kruskal(*by.values()).pvalue)
        tested.append((name, by, p))
    adjusted = holm([p for *_, p in tested])
    out = []
    for (name, by, _), p in zip(tested, adjusted, strict=True):
        medians = {k: (float(statistics.median(v)), len(v)) for k, v in sorted(by.items())}
        lo = min(m for m, _ in medians.values())
        hi = max(m for m, _ in medians.values())
        if p <= alpha and lo > 0 and hi / lo - 1 >= min_effect:
            out.append(OrderEffect(name, p, medians))
    return out
