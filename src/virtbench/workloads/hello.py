"""`hello`: print one line and exit. Boot is measured from spawn to the exit."""

from __future__ import annotations

from virtbench.workloads.kind import Needs, Workload


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return ("/bin/vb-hello",)


WORKLOAD = Workload(
    "hello",
    "exit",
    argv,
    "prints a line and exits (vb-hello)",
    needs=Needs(static_programs=("vb-hello",)),
    order=10,
)
