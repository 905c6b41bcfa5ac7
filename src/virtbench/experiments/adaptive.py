"""Adaptive repetition: what repetitions go on until, and when they stop.

A Target is one condition on an experiment's samples so far: the largest value of some
spread over its groups (each group's CV; isolation's slowdown CI widths) at most a limit.
After the spec's `runs`, repetitions go on until every target is met or `max_runs` are
done; an event says which, and why.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from virtbench.analysis.stats import summarize
from virtbench.store import Store


class Session(Protocol):
    """What adaptive repetition reads of a session (experiments/session.py's)."""

    run_id: str
    store: Store

    @property
    def repeated(self) -> Callable[[str, str], bool]: ...

    def event(self, level: str, message: str) -> None: ...


# (largest value, which group) over the groups measured since a time; None: nothing to
# judge by. math.inf: a group that cannot be judged yet (why in its group text).
Worst = tuple[float, str] | None


@dataclass(frozen=True)
class Target:
    name: str  # "CV", "slowdown CI width"
    limit: float
    unit: str  # "%", " points"
    worst: Callable[[float], Worst]  # since (a time) -> the largest value so far
    nothing: str = "no measure has two successful values"  # why worst may be None

    def text(self, value: float) -> str:
        return "none yet" if math.isinf(value) else f"{value:.1f}{self.unit}"


@dataclass(frozen=True)
class Progress:
    """How far an experiment's repetitions got: `done` so far, `limit` the most it may do
    (max_runs), and `since` when the samples that count began (a time)."""

    done: int
    limit: int
    since: float


def stop(s: Session, experiment: str, targets: list[Target], progress: Progress) -> bool:
    """After `progress.done` repetitions (at least the spec's runs): are they enough?
    Every target met (an info event), or its `limit` reached with one unmet, or nothing
    to judge by (a warning each, saying which)."""
    done, limit = progress.done, progress.limit
    worst = [(t, t.worst(progress.since)) for t in targets]
    for t, w in worst:
        if w is None:  # nothing to judge by: say so rather than claim success
            s.event(
                "warning",
                f"{experiment}: {t.name} target {t.limit:g}{t.unit} not "
                f"checked after {done} repetitions: {t.nothing}",
            )
            return True
    unmet = [(t, w) for t, w in worst if w is not None and w[0] > t.limit]
    if not unmet:
        for t, w in worst:
            assert w is not None
            s.event(
                "info",
                f"{experiment}: {t.name} target {t.limit:g}{t.unit} met after "
                f"{done} repetitions (largest {t.name} {t.text(w[0])}, "
                f"{w[1]})",
            )
        return True
    if done < limit:
        return False
    for t, w in unmet:
        s.event(
            "warning",
            f"{experiment}: {done} repetitions (max_runs) and the {t.name} "
            f"of {w[1]} is still {t.text(w[0])} "
            f"(target {t.limit:g}{t.unit})",
        )
    return True


def cv_target(s: Session, experiment: str, target_cv: float) -> Target:
    """Every group's CV (%) at most `target_cv`."""
    return Target("CV", target_cv, "%", lambda since: worst_cv(s, experiment, since))


def worst_cv(s: Session, experiment: str, since: float) -> Worst:
    """The largest CV (%) over the groups (metric, workload, runtime and conditions) of
    this experiment's successful samples since `since`, and which group; None when no
    group has 2 values. A group without a CV (mean 0) counts as met."""
    groups: dict[tuple[str, ...], list[float]] = {}
    for smp in s.store.samples(s.run_id):
        if (
            smp.experiment != experiment
            or smp.t < since
            or smp.warmup
            or smp.error
            or smp.value is None
            or not s.repeated(smp.metric, smp.workload)
        ):
            continue
        key: tuple[str, ...] = (
            smp.metric,
            smp.workload,
            smp.runtime,
            str(smp.background),
            smp.attacker,
            smp.placement,
        )
        groups.setdefault(key, []).append(smp.value)
    worst: Worst = None
    for key, values in groups.items():
        cv = summarize(values).cv * 100
        if len(values) >= 2 and not math.isnan(cv) and (worst is None or cv > worst[0]):
            where = "/".join(k for k in key[4:] if k)
            worst = (cv, f"{key[2]} {key[0]}" + (f" ({where})" if where else ""))
    return worst
