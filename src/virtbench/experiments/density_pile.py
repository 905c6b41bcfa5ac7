"""`density`'s pile-up (experiments/density.py says what it records): one runtime's
instances started one after another, each one's memory and the host's at each step,
until the target or the memory guard; then its add-ons (idle CPU, liveness probes,
sharing) and every instance stopped."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from virtbench import workloads
from virtbench.errors import InstanceError
from virtbench.experiments import density_figures as fig
from virtbench.experiments.density_bound import at_bound, crossed
from virtbench.experiments.density_idle import idle_cpu
from virtbench.experiments.density_liveness import alive, with_agent
from virtbench.experiments.density_sharing import shared
from virtbench.experiments.session import Session
from virtbench.figure import Metric
from virtbench.measure import memory
from virtbench.runtimes.base import Instance

# cgroup_stats.memory_parts' parts, and their figures
CGROUP_PARTS = {"anon": fig.CGROUP_ANON, "file": fig.CGROUP_FILE, "kernel": fig.CGROUP_KERNEL}

MIB = 1024 * 1024
# /proc/meminfo's kernel-side memory that grows with instances (namespaces, cgroups,
# page tables, task stacks, per-CPU counters); caches are dropped before each reading
KERNEL_FIELDS = ("Slab", "PageTables", "KernelStack", "Percpu")


def guard_limit(cfg: Any, mem_total: int) -> int:
    """MemAvailable below which no more instances are started (bytes)."""
    return max(int(cfg.guard_available_pct / 100 * mem_total), cfg.guard_available_mib * MIB)


class Pile:
    """One run of one runtime: sleepers started one after another, each one's memory and
    the host's at each step, until the target or the guard; then all stopped."""

    def __init__(self, s: Session, cfg: Any, runtime: str, rep: int) -> None:
        self.s, self.cfg, self.runtime, self.rep = s, cfg, runtime, rep
        self.rt, self.host = s.runtimes[runtime], s.host
        argv = workloads.get(cfg.workload).argv
        assert argv is not None, f"{cfg.workload} runs no argv of its own"
        self.argv = argv
        self.params = {**s.params(runtime), "instances_target": cfg.instances}
        self.started: list[Instance] = []
        self.none_used: float | None = None  # host memory in use before the first instance
        self.last_used: float | None = None  # ... and at the last step
        self.within: tuple[int, float] | None = None  # (instances, in use): the last step
        # within the latency bound (density_bound.py), and where it was crossed
        self.crossed_at: int | None = None
        self.limit = guard_limit(cfg, self.host.meminfo()["MemTotal"])

    def sample(self, metric: Metric, value: float | None, background: int, **kw: Any) -> None:
        """Record `metric` = `value` with `background` instances running (`kw`: the
        sample's other fields; `params` defaults to the pile-up's)."""
        self.s.record(
            metric.sample(
                value,
                experiment="density",
                runtime=self.runtime,
                workload=self.cfg.workload,
                repetition=self.rep,
                background=background,
                params=kw.pop("params", self.params),
                **kw,
            )
        )

    def step(self) -> None:
        """The host's memory with the started instances up, caches dropped (at the
        target, pods' idle CPU first: dropping the caches sets them faulting pages in)."""
        if len(self.started) == self.cfg.instances:
            idle_cpu(self)
        host, running = self.host, self.started
        n = len(running)
        at = {**self.params, "caches_dropped": host.drop_caches()}
        info = host.meminfo()
        used = self.last_used = memory.in_use(info, host.pcp_free()) / MIB
        kernel = sum(info.get(k, 0) for k in KERNEL_FIELDS) / MIB
        each = [self.rt.memory.pss_bytes(i) for i in running]
        unread = sum(p is None for p in each)
        pss = sum(p or 0 for p in each) + (self.rt.daemons.pss_bytes() or 0)
        self.sample(fig.HOST_USED, used, n, params=at)
        self.sample(fig.KERNEL_USED, kernel, n, params=at)
        if unread:  # a sum missing instances would understate the step
            self.sample(
                fig.USER_PSS,
                None,
                n,
                params=at,
                error=f"the memory of {unread} of {n} running instances could not "
                "be read (no host process of theirs left)",
            )
        else:
            self.sample(fig.USER_PSS, pss / MIB, n, params=at)
        if self.none_used is None:
            self.none_used = used
        else:
            self.s.say(
                f"density: {self.runtime} {n}/{self.cfg.instances} instances, host "
                f"memory in use {used - self.none_used:+.1f} MiB since none"
            )

    def add(self, i: int) -> str:
        """Start the `i`th instance and record its launch and memory; why the pile stops
        ("" if it does not)."""
        s, rt = self.s, self.rt
        timed: dict = {**self.params}  # the launch's quiet wait goes in its sample
        spec = s.instance_spec(self.runtime, self.argv)
        if with_agent(rt, self.cfg.liveness_probes):  # a Linux guest, asked commands
            spec = dataclasses.replace(spec, agent=True)
        try:  # an instance that never gets ready is stopped, not counted
            inst, t_ready = s.start_ready(
                self.runtime, spec, self.cfg.timeout_s, ("density", timed)
            )
            self.started.append(inst)
        except InstanceError as exc:
            self.sample(fig.LAUNCH, None, i, error=str(exc), params=timed)
            return f"instance {i + 1} failed: {exc}"
        self.sample(fig.LAUNCH, (t_ready - inst.t_spawn_ns) / 1e6, i, params=timed)
        pss = rt.memory.pss_bytes(inst)
        if pss is not None:
            self.sample(fig.PSS, pss / MIB, i)
            guest = rt.memory.guest_ram_pss(inst)
            if guest is not None:  # VMs: the VMM's own cost, without the guest's RAM
                self.sample(fig.PSS_WITHOUT_GUEST_RAM, (pss - guest) / MIB, i)
        else:
            self.sample(fig.PSS, None, i, error="no host process of the instance could be read")
        self.cgroup_memory(inst, i)
        over = rt.memory.overhead_bytes(inst)
        if over is not None:  # a pod: its sandbox's cost
            self.sample(fig.POD_OVERHEAD, over / MIB, i)
        avail = self.host.mem_available() / MIB
        self.sample(fig.MEM_AVAILABLE, avail, i)
        return ""

    def cgroup_memory(self, inst: Instance, i: int) -> None:
        """The memory charged to the `i`th instance's cgroup, in all and by part."""
        cg = self.rt.memory.cgroup_bytes(inst)
        self.sample(
            fig.CGROUP_MEMORY,
            None if cg is None else cg / MIB,
            i,
            error="" if cg is not None else "no memory cgroup",
        )
        if cg is None:
            return
        parts = self.rt.memory.cgroup_parts(inst) or {}
        for part, metric in CGROUP_PARTS.items():
            v = parts.get(part)
            why = "not accounted by this kernel" if parts else "its memory.stat unread"
            self.sample(
                metric,
                None if v is None else v / MIB,
                i,
                error="" if v is not None else why,
            )

    def pile(self) -> str:
        """Instances up to the target, a step every `instances_per_benchmark` and at the
        end; why the pile stopped."""
        cfg, limit = self.cfg, self.limit
        for i in range(cfg.instances):
            avail = self.host.mem_available()
            if avail < limit:
                return (
                    f"memory guard: MemAvailable {avail / MIB:.0f} MiB < "
                    f"{limit / MIB:.0f} MiB after {i} instances"
                )
            stop = self.add(i)
            if stop:
                return stop
            if len(self.started) % cfg.instances_per_benchmark == 0:
                self.step()
                if why := crossed(self):
                    return why
        if self.started and len(self.started) % cfg.instances_per_benchmark:
            self.step()  # the tail after the last full step
            if why := crossed(self):
                return why
        return f"reached the target of {cfg.instances}"

    def run(self) -> None:
        what = f"density: {self.runtime} run {self.rep + 1}"
        self.params = {**self.params, **self.s.settle(self.cfg.memory_settle_s, what)}
        self.step()
        try:
            reason = self.pile()
            if 0 < len(self.started) < self.cfg.instances:  # stopped short: at its end
                idle_cpu(self)
            if self.cfg.liveness_probes and self.started:
                alive(self)
            shared(self)
            at_bound(self)
        finally:
            t0 = time.monotonic()
            for inst in self.started:
                self.rt.stop(inst)
            teardown = time.monotonic() - t0
        n = len(self.started)
        self.sample(fig.REACHED, float(n), n)
        if n:
            self.sample(fig.TEARDOWN_PER_INSTANCE, teardown * 1e3 / n, n)
        level = "info" if n == self.cfg.instances else "warning"
        self.s.event(level, f"{what}: stopped at {n} instances ({reason})")
