"""Where a workload's client runs: this host (`Local`, the default) or a load-generator
host of its own (`Remote`, `virtbench run --loadgen HOST`: loadgen/remote.py).

A serving workload's client (wrk, redis-benchmark, vb-rr, ...) drives the server in an
instance. On this host it runs pinned to the CPUs the instance does not use, so client
and server share one machine. The studies that drove their servers from a second
machine did so to keep the client's own work out of the server's figures; `Remote` does
the same: the client runs there, against the instance's address as that host reaches
it, and its raw output comes back here to be parsed by the same parsers. Every sample a
client measured says where it ran (`client_params`).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from virtbench.host import proc
from virtbench.loadgen import cpu


def client_argv(artifact: Path, argv: Sequence[str]) -> list[str]:
    """A client command as run on this host: a client that is one of the artifact's own
    static programs (`/bin/vb-rr`) runs from the artifact."""
    if argv[0].startswith("/bin/vb-"):
        return [str(artifact / argv[0].lstrip("/")), *argv[1:]]
    return list(argv)


class Clients:
    """This host as the clients' host: the client pinned to `cpus` (the CPUs the
    instance does not use), the instance reached at its own address."""

    where = "local"  # what samples say of where their client ran

    def need(self, programs: Sequence[str], artifact: Path) -> str | None:
        """What of `programs` (a workload's clients) its host lacks, said as what to do
        about it; None: it has them all."""
        for program in programs:
            if shutil.which(client_argv(artifact, [program])[0]) is None:
                return f"needs {program} on the host (make setup)"
        return None

    busy: cpu.Busy | None = None  # its CPUs during the last client command
    facts: dict[str, Any] | None = None  # a load generator's, for the run's environment

    def run(
        self, argv: Sequence[str], artifact: Path, timeout: float, cpus: str | None = None
    ) -> proc.Result:
        """Run one client command to its end, its CPUs' use read around it; its status
        and output, never raised."""
        pinned = ["taskset", "-c", cpus] if cpus else []
        self.busy, before = None, cpu.counters(cpus) if cpus else None
        res = proc.run([*pinned, *client_argv(artifact, argv)], check=False, timeout=timeout)
        if before is not None and cpus:
            self.busy = cpu.between(before, cpu.counters(cpus), cpus)
        return res

    def address(self, address: str | None, network: str) -> str:
        """The address the client reaches an instance at (`address`: the instance's
        own, "" on the host's network)."""
        del network
        return address or "127.0.0.1"

    def reach(self, address: str, port: int, protocol: str, timeout: float) -> str | None:
        """Once the server answers on this host: why the client's host cannot reach it
        within `timeout`, or None (here: it is the same host)."""
        del address, port, protocol, timeout
        return None

    def trial(self) -> dict[str, Any]:
        """What the samples of the last client command record of its host during it: how
        busy its CPUs were (loadgen/cpu.py)."""
        return self.busy.params() if self.busy is not None else {}

    def client_params(self, address: str) -> dict[str, Any]:
        """What each sample a client measured records of where it ran and how it reached
        the instance at `address` (here: nothing; samples say where they ran by their
        client CPUs, and the report "client on the host under test")."""
        del address
        return {}

    def close(self) -> list[str]:
        """Remove what was made on the clients' host for the run; what resisted."""
        return []
