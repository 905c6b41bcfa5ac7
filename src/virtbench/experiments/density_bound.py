"""`density` at a latency bound: with `latency_bound_ms` (and `liveness_probes` = K), at
each step of the pile-up K of its instances, drawn at random, run vb-hello through the
runtime's exec; the pile-up stops at the first step whose probes' p99 is above the
bound (or one did not answer), as an operator packs a host only while its sandboxes
still answer in time. The answer is how many instances fit per GiB of host memory there:

  density.liveness_p99    per step: the probes' p99 (nearest rank: of fewer than 100
                          probes, their slowest), the exec call -> the line read (ms)
  density.per_gib_at_bound  once per pile-up: the instances running at the last step
                          within the bound / the host memory they used then (its memory
                          in use, caches dropped, less that before the first instance),
                          per GiB; `bound_crossed_at` in its params says at how many
                          instances the bound was crossed (None: never, the pile-up
                          ended first, and more would still fit within it)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from virtbench.experiments.density_liveness import ask
from virtbench.figure import NS_MS, pile_metric

LIVENESS_P99 = pile_metric(
    "density.liveness_p99",
    "ms",
    "lower",
    "latency_bound_ms: at each step, the p99 of K probed instances' exec of vb-hello "
    "(nearest rank: of fewer than 100, the slowest), the exec call -> its line read",
    resolution=NS_MS,
    repeated=False,
    summary="series",
    compared=False,
    label="liveness p99 at each step",
)
PER_GIB_AT_BOUND = pile_metric(
    "density.per_gib_at_bound",
    "instances",
    "higher",
    "latency_bound_ms: instances running at the last step whose probes' p99 was within "
    "the bound, per GiB of host memory they used then (memory in use, caches dropped, "
    "less that before the first instance)",
    label="instances per GiB within bound",
)
BOUND_METRICS = (LIVENESS_P99, PER_GIB_AT_BOUND)


def p99(values: list[float]) -> float:
    """The nearest-rank 99th percentile (inf among them: a probe that did not answer)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def crossed(pile: Any) -> str:
    """At a step of the pile-up: probe; why it stops here ("" while within the bound,
    and the step is kept as the last within it)."""
    bound = pile.cfg.latency_bound_ms
    if bound is None or not pile.started:
        return ""
    n = len(pile.started)
    rng = np.random.default_rng([pile.s.order_seed, pile.rep, n])
    chosen = rng.choice(n, size=min(pile.cfg.liveness_probes, n), replace=False)
    answers = [ask(pile, int(i))[0] for i in sorted(chosen)]
    times = [math.inf if ms is None else ms for ms in answers]
    tail = p99(times)
    at = {**pile.params, "probed": len(times), "latency_bound_ms": bound}
    lost = sum(math.isinf(t) for t in times)
    why = f"{lost} of {len(times)} probed instances did not answer" if lost else ""
    pile.sample(LIVENESS_P99, None if lost else tail, n, params=at, error=why)
    if lost or tail > bound:
        pile.crossed_at = n
        said = why or f"the probes' p99 {tail:.1f} ms is above {bound:g} ms"
        return f"latency bound: {said} at {n} instances"
    pile.within = (n, pile.last_used)
    return ""


def at_bound(pile: Any) -> None:
    """Once per pile-up with a bound: instances per GiB at the last step within it."""
    if pile.cfg.latency_bound_ms is None:
        return
    if pile.within is None or pile.none_used is None:
        why = "no step of the pile-up was within the latency bound"
        pile.sample(PER_GIB_AT_BOUND, None, 0, error=why)
        return
    n, used = pile.within
    gib = (used - pile.none_used) / 1024
    # not crossed: the pile-up reached its target (or the memory guard) first, and the
    # figure is what fits within the bound at least
    at = {**pile.params, "latency_bound_ms": pile.cfg.latency_bound_ms}
    at["bound_crossed_at"] = pile.crossed_at
    if gib <= 0:
        why = f"the host's memory in use did not grow over {n} instances: no per-GiB figure"
        pile.sample(PER_GIB_AT_BOUND, None, n, params=at, error=why)
        return
    pile.sample(PER_GIB_AT_BOUND, n / gib, n, params=at)
