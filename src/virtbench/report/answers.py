"""What a run answers, first: per question its data can answer, the runtimes ranked best
first, each with its figure and its 95% CI where it has one (never a range: a runtime
with fewer than 5 units shows its figure alone), and between neighbours whether the
ranking is sure (">": their intervals are apart) or not ("~": they overlap, the order
could be chance).

  fastest to start          each headline boot figure (spawn to exit, ...): median
  least memory per instance density: the host's memory per instance (the slope, report/fits)
  serves best               each throughput workload's headline figure at its highest level
  least slowed by neighbour isolation: each runtime's worst slowdown over the attacks
  least slowed by a pile-up scalability: the worker's trend per 100 background instances
  fastest to ready at once  burst: the median instance's time to ready at the highest level
  fastest to interactive    tti: create -> first command, pooled p50, one by one and at the
                            largest level, with each runtime's success rate
  fastest command inside    exec: a one-line command's median, exec call -> exit
  fastest back from pause   pause: resume call -> the next heartbeat, median
  fastest back from disk    snapshot: restore call -> the same instance's heartbeat, median;
                            with dirty levels, at the largest, and the slope per 100 MiB
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from virtbench import experiments, metrics
from virtbench.analysis.stats import slowdown_ci
from virtbench.experiments.kind import Ranked
from virtbench.report.cells import fmt, median_rows, summarize_rows, unit_keys
from virtbench.store.frame import Frame

SURE, UNSURE = ">", "~"


@dataclass(frozen=True)
class Standing:
    runtime: str
    value: float
    low: float  # 95% CI (nan: none)
    high: float
    floor: float = math.nan  # the least the quantity can be (memory per instance: 0)

    def text(self, unit: str) -> str:
        if self.low < self.floor:  # an interval reaching where the quantity cannot be
            return (f"{self.runtime} at most {fmt(self.high)} {unit} (not told from "
                    f"{fmt(self.floor)})")  # fmt: skip
        ci = f" ({fmt(self.low)} to {fmt(self.high)})" if not math.isnan(self.low) else ""
        return f"{self.runtime} {fmt(self.value)} {unit}{ci}".rstrip()


@dataclass(frozen=True)
class Answer:
    question: str
    unit: str
    standings: list[Standing]  # best first

    def line(self) -> str:
        """`crun 20.1 ms (19.9 to 20.3) > runc 21 ms (20.8 to 21.1) ~ native ...`"""
        out = self.standings[0].text(self.unit)
        for a, b in zip(self.standings, self.standings[1:], strict=False):
            apart = not math.isnan(a.low) and not math.isnan(b.low) and (
                a.high < b.low or b.high < a.low)  # fmt: skip
            out += f" {SURE if apart else UNSURE} {b.text(self.unit)}"
        return out


def _ranked(question: str, unit: str, found: list[Standing], lower_better: bool) -> list[Answer]:
    found = [s for s in found if not math.isnan(s.value)]
    if len(found) < 2:  # one runtime answers no "which"
        return []
    found.sort(key=lambda s: s.value if lower_better else -s.value)
    return [Answer(question, unit, found)]


def answers(f: Frame) -> list[Answer]:
    """Every question the run's samples answer, in the order above: the report's own
    answers (ANSWERS) for the experiment types that name them, then each type's ranked
    questions (experiments/kind.py)."""
    f = f.take(~f.warmup)
    out: list[tuple[str, Answer]] = []  # (the experiment type answering, the answer)
    by_exp = {e: f.take(f.where("experiment", e)) for e in f.distinct("experiment")}
    kinds = {t.name: t for t in experiments.types() if t.name in by_exp}
    for kind, answer in ANSWERS.items():
        out += [(name, a) for name, t in kinds.items() if t.answers == kind
                for a in answer(by_exp[name])]  # fmt: skip
    for name, t in kinds.items():
        for question in t.ranked:
            out += [(name, a) for a in _median_ranked(by_exp[name], question)]
    if "tti" in kinds:  # a sandbox run: its own questions lead
        out.sort(key=lambda x: SANDBOX_FIRST.index(x[0]) if x[0] in SANDBOX_FIRST else 99)
    return [a for _, a in out]


# What a run of the sandbox questions answers first, in this order: time to interactive,
# a command inside, back from a pause, back from disk, memory per (live) instance.
SANDBOX_FIRST = ("tti", "exec", "pause", "snapshot", "density")


def _median_ranked(f: Frame, q: Ranked) -> list[Answer]:
    """The median of the question's metric per runtime (the runtimes that can do it)."""
    found = _medians(f.take(f.where("metric", q.metric) & f.ok))
    return _ranked(f"{q.question}: {q.metric}", q.unit, found, q.lower_better)


def _burst(f: Frame) -> list[Answer]:
    """At the highest level every runtime reached: the median instance's time to ready
    (each burst's p50), over the repetitions."""
    levels = {int(m.rpartition("@")[2]) for m in f.distinct("metric")
              if m.startswith("burst.p50@")}  # fmt: skip
    for level in sorted(levels, reverse=True):
        mine = f.take(f.where("metric", f"burst.p50@{level}") & f.ok)
        found = _medians(mine)
        if len(found) >= 2:
            return _ranked(f"Fastest to ready, {level} started at once: burst.p50@{level}",
                           "ms", found, True)  # fmt: skip
    return []


def _medians(f: Frame) -> list[Standing]:
    """Each runtime's median and its 95% CI."""
    out = []
    for (runtime,), idx in f.groups("runtime"):
        st = summarize_rows(f, idx)
        out.append(Standing(runtime, st.median, st.ci_low, st.ci_high))
    return out


def _workers(f: Frame) -> list[tuple[str, Frame, str]]:
    """(worker, its rows, the figure its tables follow) of a scalability or isolation run."""
    from virtbench.report.tables import worker_metric

    out = []
    for (worker,), rows in f.groups("workload"):
        mine = f.take(rows)
        metric = worker_metric(mine)
        if metric is not None:
            out.append((worker, mine, metric))
    return out


def _first(f: Frame, name: str) -> str:
    """Text field `name` of the first row ("" when there is none)."""
    return f.labels[name][f.codes[name][0]] if len(f) else ""


def _boot(f: Frame) -> list[Answer]:
    out = []
    for (metric, workload, unit, direction), rows in f.groups("metric", "workload", "unit",
                                                              "direction"):  # fmt: skip
        m = metrics.lookup(metric, workload)
        if not m.headline or m.summary != "median":
            continue
        found = _medians(f.take(rows))
        out += _ranked(f"Fastest to start: {metric} ({workload})", unit, found,
                       direction == "lower")  # fmt: skip
    return out


def _density(f: Frame) -> list[Answer]:
    from virtbench.report.fits import cost_fits

    fits = cost_fits(f)
    cost = next(iter(metrics.fitted()), None)
    if cost is None:
        return []
    floor = math.nan if cost.lower_bound is None else cost.lower_bound
    found = [Standing(rt, fit.slope, fit.ci_low, fit.ci_high, floor)
             for (name, rt), fit in fits.items() if name == cost.name]  # fmt: skip
    return _ranked(f"Least memory per instance: {cost.name}{_alive(f)}", cost.unit, found,
                   True)  # fmt: skip


def _alive(f: Frame) -> str:
    """What density's liveness probes found, per runtime ("" without probes)."""
    rows = f.where("metric", "density.answered")
    if not rows.any():
        return ""
    said = []
    for (runtime,), idx in f.take(rows).groups("runtime"):
        sub = f.take(rows).take(idx)
        probed = sum(int(sub.params_of(int(c)).get("probed", 0)) for c in sub.codes["params"])
        ok = sub.value[sub.ok]
        said.append(f"{runtime} {int(ok.sum())} of {probed}" if ok.size else
                    f"{runtime} could not be asked")  # fmt: skip
    return f" (probed instances that answered: {', '.join(said)})"


def _throughput(f: Frame) -> list[Answer]:
    out = []
    level = f.param("level")
    for (metric, workload, unit, direction), rows in f.groups("metric", "workload", "unit",
                                                              "direction"):  # fmt: skip
        m = metrics.lookup(metric, workload)
        if not m.headline or not m.compared or m.summary != "median":
            continue
        levels = [x for x in set(level[rows].tolist()) if x is not None]
        numeric = [x for x in levels if isinstance(x, int | float)]
        top = max(numeric) if numeric and len(numeric) == len(levels) else None
        keep = rows if top is None else rows[level[rows] == top]
        found = _medians(f.take(keep))
        at = f" at level {top}" if top is not None and len(levels) > 1 else ""
        better = "most" if direction == "higher" else "least"
        out += _ranked(f"Serves best: {metric} ({workload}{at}), {better} first", unit, found,
                       direction == "lower")  # fmt: skip
    return out


def _isolation(f: Frame) -> list[Answer]:
    out = []
    for worker, mine, metric in _workers(f):
        mine = mine.take(mine.where("metric", metric) & mine.ok)
        direction = _first(mine, "direction")
        found = []
        for (runtime,), idx in mine.groups("runtime"):
            sub = mine.take(idx)
            base = np.flatnonzero(sub.where("attacker", ""))
            if not base.size or math.isnan(median_rows(sub, base)[0]):
                continue
            worst: Standing | None = None
            for (attacker, _), hit in sub.groups("attacker", "placement"):
                if not attacker:
                    continue
                point, lo, hi = slowdown_ci(sub.value[base], sub.value[hit], direction,
                                            units_b=unit_keys(sub, base),
                                            units_a=unit_keys(sub, hit))  # fmt: skip
                if worst is None or point * 100 > worst.value:  # the value is in percent
                    worst = Standing(runtime, point * 100, lo * 100, hi * 100)
            if worst is not None:
                found.append(worst)
        out += _ranked(f"Least slowed by a neighbour: {metric} ({worker}), the worst attack",
                       "% slower", found, True)  # fmt: skip
    return out


def _scalability(f: Frame) -> list[Answer]:
    from virtbench.report.fits import PER, trend

    out = []
    for worker, mine, metric in _workers(f):
        first = mine.take(mine.where("metric", metric))
        unit, direction = _first(first, "unit"), _first(first, "direction")
        found = []
        for runtime in mine.distinct("runtime"):
            fit = trend(mine, metric, runtime)
            if fit is not None:  # growth in the worse direction: lower is better
                sign = 1 if direction == "lower" else -1
                lo, hi = sorted((sign * fit.ci_low, sign * fit.ci_high))
                found.append(Standing(runtime, sign * fit.slope, lo, hi))
        out += _ranked(f"Least slowed as instances pile up: {metric} ({worker}), worse by "
                       f"this per {PER} background", unit, found, True)  # fmt: skip
    return out


def _tti(f: Frame) -> list[Answer]:
    """One by one, at the smallest and at the largest level two runtimes reached: the
    pooled p50 of create -> first command with its batch-resampled CI; the question
    says each runtime's success rate."""
    from virtbench.report.sandbox import batch_order, describe, pooled

    kinds: dict[str, list] = {}
    for b in pooled(f):
        if b.ok:
            kinds.setdefault(b.at, []).append(b)
    levels = sorted((at for at in kinds if at not in ("seq", "stagger") and len(kinds[at]) >= 2),
                    key=batch_order)  # fmt: skip
    out = []
    for at in dict.fromkeys(["seq", *levels[:1], *levels[-1:]]):
        found = kinds.get(at, [])
        rates = ", ".join(f"{b.runtime} {fmt(b.success.value)}%" for b in found)
        out += _ranked(f"Fastest to interactive, {describe(at)} (success: {rates}): "
                       f"tti.interactive@{at} p50", "ms",
                       [Standing(b.runtime, b.tails["p50"].value, b.tails["p50"].low,
                                 b.tails["p50"].high) for b in found], True)  # fmt: skip
    return out


def _snapshot(f: Frame) -> list[Answer]:
    """With dirty levels: restore to ready at the largest level two runtimes reached, and
    the restore's slope per 100 MiB dirtied."""
    from virtbench.report.sandbox import PER_MIB, dirty_slopes

    restores = [x for x in dirty_slopes(f) if x.metric == "snapshot.restore_to_ready"]
    levels = sorted({d for x in restores for d in x.medians}, reverse=True)
    out: list[Answer] = []
    for d in levels:
        metric = f"snapshot.restore_to_ready@{d}MiB"
        found = _medians(f.take(f.where("metric", metric) & f.ok))
        if len(found) >= 2:
            out += _ranked(f"Fastest back from disk, {d} MiB dirtied: {metric}", "ms", found,
                           True)  # fmt: skip
            break
    slopes = [Standing(x.runtime, x.fit.slope, x.fit.ci_low, x.fit.ci_high)
              for x in restores if x.fit is not None]  # fmt: skip
    return out + _ranked(f"Least restore time per {PER_MIB} MiB dirtied: the slope of "
                         "snapshot.restore_to_ready", "ms", slopes, True)  # fmt: skip


# The report's own answers, by the name an experiment type gives in its `answers`, in the
# order they are asked.
ANSWERS: dict[str, Callable[[Frame], list[Answer]]] = {
    "boot": _boot,
    "density": _density,
    "throughput": _throughput,
    "isolation": _isolation,
    "scalability": _scalability,
    "burst": _burst,
    "tti": _tti,
    "snapshot": _snapshot,
}
