"""`beat`: signal ready, then send a heartbeat every 2 ms until stopped (vb-ready --beat).

Each beat carries a token drawn once at the instance's start and a sequence number: a
paused instance stops beating, and a restored one goes on with the same token and the
next number, which proves it is the instance that was checkpointed. The minimal VM guest
has the same mode (vb.mode=beat). The instance of `pause` and `snapshot`.
"""

from __future__ import annotations

from virtbench.workloads.kind import Needs, Workload

PERIOD_MS = 2


def argv(instance: str) -> tuple[str, ...]:
    return ("/bin/vb-ready", "{probe}", instance, "--beat", str(PERIOD_MS))


WORKLOAD = Workload(
    "beat",
    "ready",
    argv,
    "signals ready, then a heartbeat with its own token every 2 ms (vb-ready --beat)",
    needs=Needs(static_programs=("vb-ready",)),
    order=30,
)
