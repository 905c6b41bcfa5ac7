"""What the `cri` driver (engines/cri.py) declares of a pod: how it ended and which
processes are its own (Observe), commands in it (the CRI's ExecSync), and its overhead
beyond its container (Memory)."""

from __future__ import annotations

from typing import Any

from virtbench.errors import InstanceError
from virtbench.host import cgroup_stats, cgroups
from virtbench.measure import memory
from virtbench.runtimes import owners
from virtbench.runtimes.base import Instance
from virtbench.runtimes.controls import CommandExec
from virtbench.runtimes.engines.base import engine_exit_reason
from virtbench.runtimes.engines.cri_pod import CriState
from virtbench.runtimes.observe import Memory, Observe


class CriObserve(Observe):
    """How a pod's container ended, as the CRI says; the pod's shim (and what runs below
    it: runsc's sandbox and gofer) is counted with the instance."""

    rt: Any  # the cri driver (engines/cri.py)

    def exit_reason(self, inst: Instance[CriState]) -> str | None:
        cid = inst.own.container_id
        if cid is None:
            return "ended (its container is gone)"
        try:
            status = self.rt.crictl.json("inspect", cid)["status"]
        except InstanceError as exc:
            return f"ended (the CRI cannot inspect it: {exc})"
        running = status.get("state") == "CONTAINER_RUNNING"
        oom = status.get("reason") == "OOMKilled"
        if not running:
            self.rt.save_logs(inst)  # what it printed, for the error that says how it ended
        return engine_exit_reason(running, status.get("exitCode"), oom, status.get("message"))

    def owner_pids(self, inst: Instance[CriState], pid: int | None = None) -> list[int]:
        if pid is None:
            pid = self.rt.container_pid(inst)
        if pid is None:
            return []
        return owners.supervisor_tree(pid, lambda n: n.startswith("containerd-shim"))


class CriExec(CommandExec):
    """The CRI's ExecSync, as a kubelet's exec probe calls it: `crictl exec` (through the
    run's containerd's streaming server, on 127.0.0.1)."""

    rt: Any  # the cri driver (engines/cri.py)

    def argv(self, inst: Instance[CriState], argv: list[str]) -> list[str]:
        cid = inst.own.container_id
        if cid is None:
            raise InstanceError(f"{self.rt.label}: {inst.name} has no container")
        return self.rt.crictl.argv("exec", cid, *argv)


class CriMemory(Memory):
    """A pod's overhead as a RuntimeClass's `overhead.podFixed` must cover it: what the
    pod's cgroup is charged beyond its container's own cgroup (the pause sandbox; for
    runsc the sentry and gofer), plus the PSS of the pod's processes outside its cgroup
    (the shim)."""

    rt: Any  # the cri driver (engines/cri.py)

    def overhead_bytes(self, inst: Instance[CriState]) -> int | None:
        cid = inst.own.container_id
        layout = self.rt.ctx.layout
        pod = cgroup_stats.memory_bytes(layout, inst.name)
        own = cgroup_stats.memory_bytes(layout, f"{inst.name}/{cid}") if cid else None
        if pod is None or own is None:
            return None
        return max(0, pod - own) + (memory.pss_total(self._outside(inst)) or 0)

    def overhead_cpu(self, inst: Instance[CriState]) -> dict[str, int] | None:
        """The pod's cgroup's CPU time beyond its container's, and each thread of the
        pod's processes outside its cgroup (the shim), in ns. The shim is the one found
        at its start: asking the CRI for the pod's processes now would make the shim
        answer, and count that answer as its idle use."""
        cid = inst.own.container_id
        own = cgroup_stats.cpu_ns(self.rt.ctx.layout, f"{inst.name}/{cid}") if cid else None
        shims = [p.pid for p in inst.own.shims if p.is_running()]
        counters = self.cpu_counters(inst, shims)  # the pod's cgroup, the shim's threads
        if counters is None or own is None:
            return None
        return {**counters, "cgroup": max(0, counters["cgroup"] - own)}

    def _outside(self, inst: Instance[CriState]) -> list[int]:
        """The pod's processes outside its cgroup (the shim)."""
        inside = set(cgroups.procs(self.rt.ctx.layout, inst.name))
        return [p for p in self.rt.observe.pids(inst) if p not in inside]
