"""How precise isolation's slowdowns are: the target its repetitions adapt to, and the
check of the worker's baseline spread before any attacker runs.

Target: every (runtime, attacker, placement) slowdown's 95% CI (the same bootstrap as the
report's, analysis/stats.slowdown_ci, over repetitions) at most `ci_target_pct`
percentage points wide. A slowdown with fewer than 5 repetitions has no CI yet: unmet.

Pilot: before the attacks, each runtime's worker is measured `pilot` times alone (stored
as warm-ups, `pilot` in their params). From their CV, the width a slowdown's CI would have
after `max_runs` repetitions is predicted (the ratio of two medians of n values each:
width ~ 2 x 1.96 x sqrt(2) x 1.2533 x CV / sqrt(n)); a baseline too spread for the
target is said before the attacks run, with the repetitions it would take.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from virtbench.analysis.stats import MIN_UNITS, slowdown_ci, summarize
from virtbench.errors import InstanceError
from virtbench.experiments.adaptive import Target, Worst
from virtbench.experiments.worker import Job, Worker
from virtbench.store import Sample
from virtbench.tables.base import measured

if TYPE_CHECKING:
    from virtbench.experiments.isolation_config import IsolationExperiment
    from virtbench.experiments.session import Session

WIDTH_PER_CV = 2 * 1.96 * math.sqrt(2) * 1.2533  # CI width of a ratio of medians, x CV/sqrt(n)


def predicted_width(cv: float, n: int) -> float:
    """Percentage points a slowdown's 95% CI spans after n repetitions of a worker whose
    measurements have this CV (a fraction)."""
    return 100 * WIDTH_PER_CV * cv / math.sqrt(n)


def runs_needed(cv: float, target_pct: float) -> int:
    """Repetitions for a slowdown's 95% CI to narrow to `target_pct` points."""
    return max(MIN_UNITS, math.ceil((100 * WIDTH_PER_CV * cv / target_pct) ** 2))


def ours(s: Session, cfg: IsolationExperiment) -> Callable[[Sample], bool]:
    """Is a sample a primary figure (at any level; failed ones too) of this isolation
    experiment's worker?"""
    primary, index = measured(cfg.worker).primary.name, s.experiment_index or 0
    return lambda smp: (
        smp.experiment == "isolation"
        and smp.workload == cfg.worker
        and smp.params.get("experiment_index", 0) == index
        and smp.metric.partition("@")[0] == primary
    )


def slowdown_target(s: Session, cfg: IsolationExperiment) -> Target:
    return Target(
        "slowdown CI width",
        cfg.ci_target_pct,
        " points",
        lambda since: widest(s, cfg, since),
        "no attacked measurement succeeded",
    )


def widest(s: Session, cfg: IsolationExperiment, since: float) -> Worst:
    """The widest slowdown CI (points) over runtime x attacker x placement measured since
    `since`, and which; inf for one that cannot be judged yet (too few successful
    repetitions, or no successful baseline); None when nothing was measured."""
    mine = ours(s, cfg)
    groups: dict[tuple[str, ...], tuple[list[float], list[int]]] = defaultdict(lambda: ([], []))
    direction: dict[str, str] = {}
    for smp in s.store.samples(s.run_id):
        if smp.warmup or smp.t < since or not mine(smp):
            continue
        values, units = groups[(smp.runtime, smp.metric, smp.attacker, smp.placement)]
        direction[smp.metric] = smp.direction
        if not smp.error and smp.value is not None:  # a failed one: a group still to judge
            values.append(smp.value)
            units.append(smp.repetition)
    several = len(direction) > 1
    worst: Worst = None
    for (runtime, metric, attacker, placement), (values, units) in sorted(groups.items()):
        if not attacker:
            continue
        what = f"{runtime} {attacker} at {placement}" + (f" ({metric})" if several else "")
        width, why = judged(
            groups.get((runtime, metric, "", ""), ([], [])), (values, units), direction[metric]
        )
        if worst is None or width > worst[0]:
            worst = (width, what + why)
    return worst


def judged(
    base: tuple[list[float], list[int]], hit: tuple[list[float], list[int]], direction: str
) -> tuple[float, str]:
    """(width of the slowdown's 95% CI in points, "") or (inf, why there is none)."""
    n_base, n_hit = len(set(base[1])), len(set(hit[1]))
    if not n_base:
        return math.inf, " (no successful baseline)"
    if min(n_base, n_hit) < MIN_UNITS:
        return math.inf, f" (only {min(n_base, n_hit)} successful repetitions)"
    _, lo, hi = slowdown_ci(base[0], hit[0], direction, units_b=base[1], units_a=hit[1])
    if math.isnan(lo):
        return math.inf, " (no CI)"
    return (hi - lo) * 100, ""


def adapts(cfg: IsolationExperiment) -> bool:
    """Does the CI target apply: on, and enough repetitions allowed for a CI?"""
    return bool(cfg.ci_target_pct) and (cfg.run_limit() or 0) >= MIN_UNITS


def pilot(s: Session, cfg: IsolationExperiment, cpu: int) -> None:
    """Each runtime's worker measured `cfg.pilot` times alone (on an idle host), then the
    verdict: can the target be met within max_runs repetitions? Said as an event either
    way; a resumed run keeps the check it made."""
    limit = cfg.run_limit()
    if not cfg.ci_target_pct or limit is None:
        return
    if limit < MIN_UNITS:
        s.event(
            "info",
            f"isolation: at most {limit} repetitions: no slowdown will have a "
            f"95% CI (it takes {MIN_UNITS}); the target of {cfg.ci_target_pct:g} "
            "points is not checked",
        )
        return
    job = Job.of(cfg, cfg.worker)
    mine = ours(s, cfg)
    done = {x.runtime for x in s.store.samples(s.run_id) if x.params.get("pilot") and mine(x)}
    for runtime in [r for r in s.spec.runtimes if r not in done] if cfg.pilot else []:
        worker = Worker(s, runtime, job, cpus=str(cpu))
        try:
            with worker:
                worker.start()
                for k in range(cfg.pilot):
                    worker.measure_levels("isolation", **pilot_labels(k))
        except InstanceError as exc:  # the repetitions meet it again and record it
            s.event(
                "warning",
                f"isolation: {runtime}: the baseline check could not measure the worker: {exc}",
            )
            continue
        verdict(s, cfg, runtime, limit)


def pilot_labels(k: int) -> dict[str, Any]:
    return {
        "repetition": k,
        "warmup": True,
        "attacker": "",
        "placement": "",
        "params": {"pilot": True},
    }


def verdict(s: Session, cfg: IsolationExperiment, runtime: str, limit: int) -> None:
    """Say whether `runtime`'s baseline spread lets a slowdown's CI reach the target."""
    by: dict[str, list[float]] = defaultdict(list)  # per level
    mine = ours(s, cfg)
    for x in s.store.samples(s.run_id):
        if (
            x.runtime == runtime
            and x.warmup
            and x.params.get("pilot")
            and mine(x)
            and not x.error
            and x.value is not None
        ):
            by[x.metric].append(x.value)
    spreads = [(summarize(v).cv, len(v)) for v in by.values() if len(v) >= 2]
    cv, n = max(((c, k) for c, k in spreads if not math.isnan(c)), default=(math.nan, 0))
    if math.isnan(cv):
        s.event(
            "warning",
            f"isolation: {runtime}: the baseline check got no two values: its spread is unknown",
        )
        return
    target = cfg.ci_target_pct
    width, need = predicted_width(cv, limit), runs_needed(cv, target)
    alone = f"{n} measurements alone had a CV of {cv * 100:.1f}%"
    if width > target:
        s.event(
            "warning",
            f"isolation: {runtime}: the baseline spread is too wide for the "
            f"{target:g}-point CI target: {alone}, so a slowdown's 95% CI "
            f"would be about {width:.0f} points wide after {limit} repetitions "
            f"(max_runs); it would take about {need} (raise max_runs), a "
            "quieter host or a longer measurement",
        )
    else:
        s.event(
            "info",
            f"isolation: {runtime}: {alone}: a slowdown's 95% CI should narrow "
            f"to {target:g} points in about {need} repetitions",
        )
