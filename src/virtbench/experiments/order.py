"""The order runtimes are measured in, and whether that order changed the figures.

Each repetition measures every runtime once, in an order taken from a Williams design:
over a full cycle of its rows (n rows for an even number of runtimes, 2n for an odd one)
every runtime directly follows every other runtime equally often, so a runtime that slows
whatever runs next cannot favour or penalise one runtime. Which runtime gets which
position is shuffled with a seed (recorded in the run's events; derived from the run id
unless the spec sets `order_seed`, so `run --resume` replays the same order).

Every timed sample records its `predecessor` (the runtime measured just before it in the
same experiment, "" for the first) in its params. `order_effects` tests, per group of
samples, whether the predecessor explains a difference (Kruskal-Wallis over the groups
of at least MIN_PER_PREDECESSOR values, Holm-corrected over all groups tested); a
significant one is reported with the medians after each predecessor.
"""

from __future__ import annotations

import hashlib
import math
import random
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from virtbench.stats import holm

MIN_PER_PREDECESSOR = 4
ALPHA = 0.05
MIN_EFFECT = 0.10  # a predecessor must move the median by at least 10%: with many
# values the test's p alone would flag tiny, steady shifts


def williams(n: int) -> list[list[int]]:
    """Rows of a Williams design for `n` treatments: in the rows taken together each
    treatment directly follows each other one equally often (once for even `n`, twice
    for odd `n`, whose design has 2n rows: each row and its reverse)."""
    if n <= 1:
        return [[0]] if n == 1 else []
    first = [0]
    lo, hi = 1, n - 1
    for k in range(1, n):
        first.append(lo if k % 2 else hi)
        if k % 2:
            lo += 1
        else:
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [list(reversed(r)) for r in rows]
    return rows


def seed_for(run_id: str, given: int | None = None) -> int:
    """The order seed: the spec's, else one derived from the run id (stable on resume)."""
    if given is not None:
        return given
    return int.from_bytes(hashlib.sha256(run_id.encode()).digest()[:4], "big")


def orders(names: list[str], seed: int) -> list[list[str]]:
    """The design's rows over `names`, positions shuffled by `seed`; row i is for
    repetition i (cycled)."""
    if not names:
        return [[]]
    perm = list(names)
    random.Random(seed).shuffle(perm)
    rows = williams(len(perm))
    random.Random(seed + 1).shuffle(rows)  # which row comes first: also seeded
    return [[perm[i] for i in row] for row in rows]


class Predecessors:
    """The runtime measured just before, per experiment (for each sample's params)."""

    def __init__(self) -> None:
        self._last: dict[str, str] = {}

    def take(self, experiment: str, runtime: str) -> str:
        """The predecessor of this measurement of `runtime`; it becomes the next one's."""
        before = self._last.get(experiment, "")
        self._last[experiment] = runtime
        return before


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
            f"({after}; p={self.p:.2g})"
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
