"""The truth a test injects into the fake runtime (tests/fakeruntime.py), and the fake
host that holds its instances.

A `Truth` says, per runtime label, how its instances behave: boot durations (log-normal
with a median and a CV), how boot and a worker's figure grow with every running instance
of the runtime, what an instance costs in memory (user side: the PSS of its processes;
kernel side: what the host loses beyond that), what a stop leaves for the next launch
until it settles, and how much each attacker kind at each placement slows the worker.
The `World` is the fake host's state (its running instances, the last stop, the seeded
draws); `FakeHost` and `FakeHarness` (tests/fakehost.py) give it to virtbench through
the seams a real run uses (Session.host, runner.execute's harness), so every experiment
runs unchanged.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from virtbench.measure.topology import PLACEMENTS, Topology
from virtbench.workloads import attackers

MIB = 1 << 20
# Two cores of two hardware threads: the worker on cpu 3 has every placement, each on a
# CPU set of its own (same-cpu 3, smt-sibling 2, other-cpu 0, all-other 0-1).
TOPOLOGY = Topology((0, 1, 2, 3), {0: (0, 1), 1: (0, 1), 2: (2, 3), 3: (2, 3)})
FAKE_PID = 1 << 22  # above any pid_max: a fake pid is never a real process


@dataclass(frozen=True)
class RuntimeTruth:
    """How one runtime label's fake instances behave."""

    exit_ms: float = 10.0  # median spawn -> exit of a foreground instance (hello, sqlite)
    ready_ms: float = 20.0  # median spawn -> ready of a detached one (sleep, attackers)
    cv: float = 0.05  # of both durations (log-normal)
    second_ms: float = 0.0  # a second mode: this much more, in `second_share` of launches
    second_share: float = 0.0
    slope_ms: float = 0.0  # boot grows by this per running instance of the runtime
    pss_mib: float = 2.0  # user side of one instance: PSS of its processes (median)
    pss_cv: float = 0.02
    kernel_mib: float = 1.0  # what the host loses per instance beyond its PSS
    carry_ms: float = 0.0  # a launch before this runtime's last stop settled pays this
    settle_s: float = 0.002  # a stop settles this long after it returned
    figure: float = 1000.0  # the worker's figure (sqlite inserts/s), median alone
    figure_cv: float = 0.05
    figure_slope: float = 0.0  # the figure changes by this per running instance
    slowdown: dict[tuple[str, str], float] = field(default_factory=dict)  # (attacker,
    # placement) -> factor the figure is divided by while those attackers run (2 = half)
    overhead_mib: float | None = None  # a pod's sandbox (`cri`): its cost beyond its
    # container, drawn per instance like its PSS; None: no such split
    overhead_mcpu: float | None = None  # ... and the CPU it runs while idle (millicores)
    idle_mcpu: float = 0.0  # the CPU a whole instance (its overhead included) runs idle
    needs_mib: float = 0.0  # an instance given less memory than this fails to start
    unreadable: tuple[int, ...] = ()  # the memory of these detached starts (numbered
    # from 1, host-wide) cannot be read: their processes are gone
    tight_mib: float = 0.0  # ... and below this its figure is halved (it swaps, say)
    # operations on a running instance (exec, pause, snapshot); None: it has none
    exec_ms: float | None = 5.0  # a command run in it, spawn -> exit (exactly this)
    exec_per_mib_ms: float = 2.0  # ... plus this per MiB of its output
    exec_lost_bytes: int = 0  # its output comes back this many bytes short
    exec_per_instance_ms: float = 0.0  # ... and takes this much more per instance running
    exec_fail_share: float = 0.0  # this share of commands exit 1 (drawn per command)
    # the task's steps in the instance (clone, venv, install, test: exactly these ms), its
    # exec taking exec_ms more; a step named by task_fails fails (the task exits 1)
    task_steps_ms: tuple[float, float, float, float] = (100.0, 50.0, 5000.0, 3000.0)
    task_fails: str = ""
    mute: tuple[int, ...] = ()  # these detached starts (numbered from 1, host-wide) stop
    # answering commands: an exec in them times out
    pause_ms: float | None = 3.0  # the pause call takes this long (slept)
    resume_ms: float = 2.0  # the resume call takes this long (slept) ...
    resume_ready_ms: float = 4.0  # ... and the next heartbeat arrives this long after it
    beats_while_paused: bool = False  # a pause that does not pause: it goes on beating
    checkpoint_ms: float | None = 8.0  # the checkpoint call (slept); None: no checkpoint
    image_mib: float = 3.0  # the checkpoint image it writes
    restore_ms: float = 6.0  # the restore call (slept) ...
    restore_ready_ms: float = 9.0  # ... and the first heartbeat after it
    checkpoint_per_mib_ms: float = 0.0  # the checkpoint call takes this much more per
    # MiB the instance dirtied (snapshot's dirty_mib), and its image is that much bigger
    restore_per_mib_ms: float = 0.0  # ... and its first heartbeat after a restore this later
    restore_cv: float = 0.0  # the spread (log-normal) of restore_ready_ms
    cold_ms: float = 0.0  # a restore whose image is out of the page cache is back this later
    touch_per_mib_ms: float = 0.01  # a restored instance touches what it dirtied this fast
    cold_touch_per_mib_ms: float = 0.0  # ... and this much slower after a cold restore
    ksm_mib: float = 0.0  # of each instance's memory, what KSM merges once it is on
    restores_a_stranger: bool = False  # a restored instance beats with another token
    copy_stagger_ms: float = 0.0  # copies restored at once: the k-th beats k-1 times this later
    copies_lost: int = 0  # ... and the first this many restored never beat


@dataclass(frozen=True)
class Truth:
    """Everything a test injects: per runtime label, and the host's memory."""

    runtimes: dict[str, RuntimeTruth]
    seed: int = 0
    mem_total_mib: float = 65536.0
    mem_available_mib: float = 60000.0  # with no instance running
    mem_noise_mib: float = 0.25  # SD of each MemAvailable (and Slab) reading
    slab_mib: float = 300.0  # Slab with no instance running
    topology: Topology = TOPOLOGY  # the host's CPUs and their cores
    emulated_host: bool = False  # QEMU emulates the whole host (a TCG guest host)


@dataclass
class FakeInstance:
    """A running fake instance: what it is and what it holds."""

    label: str
    kind: str  # "ready" (sleep, a background server) or "attacker"
    attacker: str  # its attacker kind ("" for others)
    cpus: str | None
    pss: int | None  # None: its processes cannot be read
    kernel: int
    pid: int
    overhead: int | None = None
    overhead_mcpu: float | None = None  # what its overhead runs while idle, in millicores
    idle_mcpu: float = 0.0  # what it runs while idle, its overhead included
    t0_ns: int = field(default_factory=time.monotonic_ns)  # when it started


def lognormal(rng: np.random.Generator, median: float, cv: float) -> float:
    """One draw of a log-normal with this median and coefficient of variation."""
    return median * math.exp(math.sqrt(math.log1p(cv * cv)) * rng.standard_normal())


def classify(argv: tuple[str, ...]) -> tuple[str, str]:
    """(kind, what) of an instance's command: ("exit", "hello"), ("exit", "sqlite"),
    ("ready", "sleep"), ("attacker", "cpu")... ValueError for anything else."""
    if argv[:1] == ("/bin/vb-hello",):
        return "exit", "hello"
    if argv[:1] == ("/bin/vb-sqlite",):
        return "exit", "sqlite"
    if argv[:1] == ("/bin/vb-sleep",):
        return "ready", "sleep"
    if argv[:1] == ("/bin/vb-ready",) and len(argv) > 3:
        rest = argv[3:]
        for a in attackers.ATTACKERS.values():
            if rest == a.command:
                return "attacker", a.name
        return "ready", rest[0]
    raise ValueError(f"the fake runtime cannot run {' '.join(argv)!r}")


class World:
    """The fake host's state: its running instances, its stops, its seeded draws."""

    def __init__(self, truth: Truth) -> None:
        self.truth = truth
        self.rng = np.random.default_rng(truth.seed)
        self.running: dict[str, FakeInstance] = {}
        self.last_stop: tuple[str, int] | None = None  # (label, monotonic ns), host-wide
        self.stopped_at: dict[str, int] = {}  # label -> monotonic ns of its last stop
        self.carried: list[str] = []  # labels of launches that paid a carry-over
        self.started = 0  # detached instances started (numbers their fake pids)
        # called with the count before each detached start: a test raises from it (an
        # interruption, a runtime that fails)
        self.fault: Callable[[int], None] | None = None
        self.drivers: Any = None  # the drivers its fake runtime is under (fakeruntime.install)
        self.ksm_on = False  # KSM switched on (FakeKsm)
        self.ksm_reads = 0  # its counters read so far: a full scan each

    def merged(self) -> int:
        """Bytes KSM merged: every running instance's `ksm_mib`, while it is on."""
        if not self.ksm_on:
            return 0
        return int(sum(self.of(i.label).ksm_mib for i in self.running.values()) * MIB)

    def of(self, label: str) -> RuntimeTruth:
        return self.truth.runtimes[label]

    def background(self, label: str) -> int:
        """Running instances of `label` that are not attackers (what boot grows with)."""
        return sum(1 for i in self.running.values() if i.label == label and i.kind != "attacker")

    def carry_ms(self, label: str, t_ns: int) -> float:
        """What a launch of `label` at `t_ns` pays for the previous instance's stop: that
        runtime's carry-over, if it had not settled yet."""
        if self.last_stop is None:
            return 0.0
        prev, at = self.last_stop
        if t_ns - at >= self.of(prev).settle_s * 1e9 or not self.of(prev).carry_ms:
            return 0.0
        self.carried.append(label)
        return self.of(prev).carry_ms

    def settled(self, label: str) -> bool:
        """Whether `label`'s last stop has settled (Runtime.settled of the fake)."""
        at = self.stopped_at.get(label)
        return at is None or time.monotonic_ns() - at >= self.of(label).settle_s * 1e9

    def duration_ms(self, label: str, kind: str, t_ns: int) -> float:
        """A launch's spawn -> exit (foreground) or spawn -> ready (detached)."""
        rt = self.of(label)
        median = rt.exit_ms if kind == "exit" else rt.ready_ms
        grown = rt.slope_ms * self.background(label)
        second = rt.second_ms if self.rng.random() < rt.second_share else 0.0
        return lognormal(self.rng, median, rt.cv) + grown + second + self.carry_ms(label, t_ns)

    def figure(self, label: str, cpus: str | None, memory_mib: int | None = None) -> float:
        """The worker's figure now: its draw, grown with the running instances, divided
        by the slowdown of every attacker group running, at the placement its CPUs are;
        halved when its memory is below the truth's `tight_mib`."""
        rt = self.of(label)
        grown = rt.figure_slope * self.background(label)
        value = lognormal(self.rng, rt.figure, rt.figure_cv) + grown
        if memory_mib is not None and memory_mib < rt.tight_mib:
            value /= 2
        topo = self.truth.topology
        worker = int(cpus) if cpus is not None and cpus.isdigit() else topo.cpus[-1]
        groups: dict[str, set[int]] = {}
        for i in self.running.values():
            if i.label == label and i.kind == "attacker" and i.cpus is not None:
                groups.setdefault(i.attacker, set()).add(int(i.cpus))
        for name, cpus_of in groups.items():
            for placement in PLACEMENTS:
                if set(topo.placement(placement, worker)[0]) == cpus_of:
                    value /= rt.slowdown.get((name, placement), 1.0)
                    break
        return value

    def add(self, name: str, label: str, kind: str, what: str, cpus: str | None) -> FakeInstance:
        """A detached instance starts running (and holding memory)."""
        rt = self.of(label)
        if self.fault is not None:
            self.fault(self.started + 1)
        self.started += 1
        inst = FakeInstance(
            label=label,
            kind=kind,
            attacker=what if kind == "attacker" else "",
            cpus=cpus,
            pss=None
            if self.started in rt.unreadable
            else int(lognormal(self.rng, rt.pss_mib, rt.pss_cv) * MIB),
            kernel=int(rt.kernel_mib * MIB),
            overhead=None
            if rt.overhead_mib is None
            else int(lognormal(self.rng, rt.overhead_mib, rt.pss_cv) * MIB),
            overhead_mcpu=rt.overhead_mcpu,
            idle_mcpu=rt.idle_mcpu,
            pid=FAKE_PID + self.started,
        )
        self.running[name] = inst
        return inst

    def stop(self, name: str, label: str) -> None:
        """An instance was stopped: its memory is back; its stop starts settling."""
        self.running.pop(name, None)
        now = time.monotonic_ns()
        self.last_stop = (label, now)
        self.stopped_at[label] = now

    def slab(self) -> int:
        """Slab: the base plus every running instance's kernel side, plus noise."""
        used = sum(i.kernel for i in self.running.values())
        noise = self.rng.normal(0.0, self.truth.mem_noise_mib) * MIB
        return int(self.truth.slab_mib * MIB + used + noise)

    def mem_available(self) -> int:
        """MemAvailable: the base less every running instance's PSS and kernel side (less
        what KSM merged, while it is on), plus the reading's noise."""
        used = sum((i.pss or 0) + i.kernel for i in self.running.values()) - self.merged()
        noise = self.rng.normal(0.0, self.truth.mem_noise_mib) * MIB
        return int(self.truth.mem_available_mib * MIB - used + noise)
