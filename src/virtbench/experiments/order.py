"""The order runtimes are measured in.

Each repetition measures every runtime once, in an order taken from a Williams design:
over a full cycle of its rows (n rows for an even number of runtimes, 2n for an odd one)
every runtime directly follows every other runtime equally often, so a runtime that slows
whatever runs next cannot favour or penalise one runtime. Which runtime gets which
position is shuffled with a seed (recorded in the run's events; derived from the run id
unless the spec sets `order_seed`, so `run --resume` replays the same order).

Every timed sample records its `predecessor` (the runtime measured just before it in the
same experiment, "" for the first) in its params, which analysis/order.py tests for an
effect of the order on the figures.
"""

from __future__ import annotations

import hashlib
import random


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
