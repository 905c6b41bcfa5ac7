"""`sleep`: signal ready over the probe, then block until killed (vb-sleep).

The idle instance of density and the background of scalability; boot is measured from
spawn to the ready datagram. vb-sleep sends it itself, once it runs: density reads the
instance's memory right after ready, and a vb-ready still on its way into exec has
another program's memory, or none /proc can read.
"""

from __future__ import annotations

from virtbench.workloads.kind import Needs, Workload


def argv(instance: str) -> tuple[str, ...]:
    return ("/bin/vb-sleep", "{probe}", instance)


WORKLOAD = Workload(
    "sleep",
    "ready",
    argv,
    "signals ready, then sleeps until stopped (vb-sleep)",
    needs=Needs(static_programs=("vb-sleep",)),
    order=20,
)
