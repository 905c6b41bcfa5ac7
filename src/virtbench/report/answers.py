"""What a run answers, first: every question its experiment types' views ask of their
samples (report/views), in the views' order, each an `Answer` (report/standing.py):
the runtimes ranked best first with their figures, 95% CIs and ratios to the best.

  fastest to start            boot: each headline boot figure, median
  least memory per instance   density: host memory in use per instance (a fitted slope)
  serves best                 throughput: each workload's headline figures, top level
  least slowed by a neighbour isolation: each runtime's worst slowdown
  least slowed by a pile-up   scalability: the worker's trend per 100 background
  fastest to ready at once    burst: the median instance's time to ready, top level
  fastest to interactive      tti: create -> first command, pooled p50 and p95
  fastest command inside      exec: a one-line command, exec call -> exit
  fastest back from pause     pause: resume call -> the next heartbeat
  fastest back from disk      snapshot: restore call -> the same instance's heartbeat
"""

from __future__ import annotations

from dataclasses import replace

from virtbench.report import views
from virtbench.report.standing import Answer
from virtbench.store.frame import Frame


def answers(f: Frame, baseline: str | None = None) -> list[Answer]:
    """Every question the run's samples answer (warm-ups left out), each type's in its
    view's order; `baseline`: the runtime every other is set against where it answered
    (default: the best of each question)."""
    f = f.take(~f.warmup)
    out: list[Answer] = []
    for view in views.of_run(f.distinct("experiment")):
        out += view.answers(f.take(f.where("experiment", view.type)))
    if baseline:
        out = [replace(a, baseline=baseline) for a in out]
    emulated = emulated_runtimes(f)
    return [replace(a, emulated=emulated) for a in out] if emulated else out


def emulated_runtimes(f: Frame) -> frozenset[str]:
    """The runtimes whose samples were measured under emulation (QEMU TCG): their
    figures say that it works and roughly how, not how fast it is."""
    return frozenset(r for r in f.distinct("runtime") if f.emulated[f.where("runtime", r)].any())
