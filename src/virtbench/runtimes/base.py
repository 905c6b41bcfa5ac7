"""The Runtime protocol: a small driver lifecycle with the bookkeeping in the base class.

A driver fills in `_start` (launch, detached or foreground), `_wait` and `_stop`.
The public `start`/`run_to_exit`/`stop` own timing, the run's ledger, the ready-probe
address, bridge networking, cgroup removal and idempotency. Every instance a Runtime
started is tracked until stopped, and `stop_all` is what a `finally:` calls.

Timeline of one instance (host monotonic clock, ns):
  (prepare)  untimed: bundle files, cgroups, network namespace
  t_spawn   the launch call is issued (just before fork/exec of the launcher)
  t_started the launcher returned (detached) -- the instance exists
  ready     the in-instance probe's datagram arrived (measured by the probe listener)
  exit      the instance's main process exited (foreground runs)
  teardown  the stop call took this long
"""

from __future__ import annotations

import contextlib
import shutil
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from virtbench import cgroups, proc
from virtbench.errors import InstanceError, SpecError

if TYPE_CHECKING:
    import subprocess

    from virtbench.measure.probe import ProbeListener
    from virtbench.paths import Paths
    from virtbench.runtimes.network import BridgeNetwork
    from virtbench.state import RunState

PROBE_PLACEHOLDER = "{probe}"
PROBE_MOUNT = "/run/vb"  # where the probe socket directory appears inside containers


class Family(StrEnum):
    PROCESS = "process"
    CONTAINER = "container"
    SANDBOX = "sandbox"
    VM = "vm"


@dataclass(frozen=True)
class Availability:
    """Whether a runtime can run here; when not, why and the command that fixes it."""

    ok: bool
    version: str = ""
    reason: str = ""
    fix: str = ""


@dataclass(frozen=True)
class InstanceSpec:
    """What an experiment asks a runtime to start. `argv` uses paths inside the rootfs
    and may contain PROBE_PLACEHOLDER, replaced by the address the instance can reach."""

    name: str
    argv: tuple[str, ...]
    rootfs: Path
    network: str = "none"
    memory_mib: int | None = None
    cpus: str | None = None


@dataclass
class Instance:
    """One running (or finished) thing a runtime started."""

    spec: InstanceSpec
    runtime: str
    log_path: Path
    argv: tuple[str, ...] = ()
    t_spawn_ns: int = 0
    t_started_ns: int = 0
    t_exit_ns: int | None = None
    exit_code: int | None = None
    address: str | None = None
    netns: Path | None = None
    proc: subprocess.Popen | None = None
    stopped: bool = False
    binds: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    def log_tail(self, lines: int = 5) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])


@dataclass
class RuntimeContext:
    """What every driver of one run shares (passed in, never read from globals)."""

    run_id: str
    state: RunState
    paths: Paths
    layout: cgroups.Layout
    probe: ProbeListener | None = None
    bridge: BridgeNetwork | None = None

    @property
    def scratch(self) -> Path:
        return self.state.dir


class Runtime(ABC):
    """Base class of every runtime driver."""

    name: ClassVar[str]
    family: ClassVar[Family]
    description: ClassVar[str] = ""
    networks: ClassVar[tuple[str, ...]] = ("none", "host", "bridge")

    def __init__(self, ctx: RuntimeContext) -> None:
        self.ctx = ctx
        self.instances: dict[str, Instance] = {}

    # --- what drivers provide -------------------------------------------------------
    @classmethod
    @abstractmethod
    def available(cls) -> Availability:
        """Can this runtime run here? Never raises."""

    def _prepare(self, inst: Instance) -> None:  # noqa: B027 - optional hook
        """Untimed set-up before the launch call (bundle files, cgroups); may record to the
        ledger. Default: nothing."""

    @abstractmethod
    def _start(self, inst: Instance, detach: bool) -> None:
        """Launch `inst` (timed). Detached: return once it exists. Foreground: set `inst.proc`."""

    @abstractmethod
    def _stop(self, inst: Instance) -> None:
        """Stop and delete `inst`; must tolerate an instance that already exited."""

    def _wait(self, inst: Instance, timeout: float) -> int:
        """Wait for a foreground instance's exit; return its exit status."""
        assert inst.proc is not None
        return proc.wait(inst.proc, timeout)

    @classmethod
    def list_instances(cls) -> list[str]:
        """Names of every instance this runtime holds on the host, ours or not (for
        `virtbench clean`, which keeps the `vb-<run-id>-` ones). Default: none, for
        runtimes whose instances are plain processes found by cgroup or environment."""
        return []

    @classmethod
    def remove_instance(cls, name: str) -> None:
        """Force-remove a leftover instance by name (for `virtbench clean`)."""
        del name  # runtimes without a registry of their own have nothing to remove

    def pids(self, inst: Instance) -> list[int]:
        """Host pids that belong to the instance (its cgroup's processes by default)."""
        return cgroups.procs(self.ctx.layout, inst.name)

    def memory_bytes(self, inst: Instance) -> int | None:
        """Memory charged to the instance's cgroup."""
        return cgroups.memory_bytes(self.ctx.layout, inst.name)

    # --- the public lifecycle -----------------------------------------------------------
    def effective_network(self, requested: str) -> str:
        """The network the instance will really have (recorded with every sample)."""
        if requested not in self.networks:
            if self.family is Family.PROCESS:
                return "host"
            raise SpecError(
                f"runtime {self.name}: network {requested!r} not supported "
                f"(allowed: {', '.join(self.networks)})"
            )
        return requested

    def start(self, spec: InstanceSpec, detach: bool = True) -> Instance:
        """Start an instance. The ledger records it before anything is created."""
        if spec.name in self.instances:
            raise InstanceError(f"instance {spec.name} already started")
        network = self.effective_network(spec.network)
        self.ctx.state.record("instance", spec.name, runtime=self.name)
        log_dir = self.ctx.scratch / "logs"
        log_dir.mkdir(exist_ok=True)
        inst = Instance(spec=spec, runtime=self.name, log_path=log_dir / f"{spec.name}.log")
        self.instances[spec.name] = inst
        inst.argv = self._resolve_probe(inst, network)
        if network == "bridge":
            inst.netns, inst.address = self._bridge().attach(spec.name)
        try:
            self._prepare(inst)
            inst.t_spawn_ns = time.monotonic_ns()
            self._start(inst, detach)
        except OSError as exc:  # e.g. a cpuset the host does not have
            self.stop(inst)
            raise InstanceError(f"{self.name}: cannot start {spec.name}: {exc}") from None
        except BaseException:
            # Ctrl-C or a driver error: clean up, but never let a clean-up error hide
            # the original one (the run's teardown sweeps anything left by label).
            with contextlib.suppress(Exception):
                self.stop(inst)
            raise
        inst.t_started_ns = time.monotonic_ns()
        return inst

    def run_to_exit(self, spec: InstanceSpec, timeout: float) -> Instance:
        """Start in the foreground and wait for the main process to exit."""
        inst = self.start(spec, detach=False)
        try:
            inst.exit_code = self._wait(inst, timeout)
        except Exception as exc:
            self.stop(inst)
            raise InstanceError(f"{self.name}: {spec.name} did not exit in {timeout:g} s") from exc
        inst.t_exit_ns = time.monotonic_ns()
        return inst

    def stop(self, inst: Instance) -> float:
        """Stop and remove everything of `inst`; return seconds taken. Idempotent."""
        if inst.stopped:
            return 0.0
        t0 = time.monotonic()
        try:
            self._stop(inst)
        finally:
            inst.stopped = True
            for d in self.ctx.layout.dirs(inst.name):
                cgroups.kill_and_remove(d)
            if inst.netns is not None and self.ctx.bridge is not None:
                self.ctx.bridge.detach(inst.name)
            self.instances.pop(inst.name, None)
        return time.monotonic() - t0

    def stop_all(self) -> None:
        """Stop every instance this driver still has (used from `finally:`)."""
        errors = []
        for inst in list(self.instances.values()):
            try:
                self.stop(inst)
            except Exception as exc:  # keep stopping the others
                errors.append(f"{inst.name}: {exc}")
        if errors:
            raise InstanceError(f"{self.name}: could not stop {len(errors)}: {errors[0]}")

    # --- helpers ---------------------------------------------------------------------------
    def _bridge(self) -> BridgeNetwork:
        if self.ctx.bridge is None:
            from virtbench.runtimes.network import BridgeNetwork

            self.ctx.bridge = BridgeNetwork(self.ctx.run_id, self.ctx.state)
        self.ctx.bridge.ensure()
        if self.ctx.probe is not None:
            self.ctx.probe.add_udp(self.ctx.bridge.host_ip)
        return self.ctx.bridge

    def _resolve_probe(self, inst: Instance, network: str) -> tuple[str, ...]:
        """Replace PROBE_PLACEHOLDER by an address reachable from this instance."""
        argv = inst.spec.argv
        if PROBE_PLACEHOLDER not in argv:
            return argv
        probe = self.ctx.probe
        if probe is None:
            raise InstanceError("workload needs the ready probe but none is listening")
        if network == "bridge":
            addr = f"udp:{self._bridge().host_ip}:{probe.port}"
        elif network == "host" or self.family is Family.PROCESS:
            addr = f"udp:127.0.0.1:{probe.port}"
        else:
            inst.binds.append((probe.unix_dir, PROBE_MOUNT))
            addr = f"unix:{PROBE_MOUNT}/{probe.unix_name}"
        return tuple(addr if a == PROBE_PLACEHOLDER else a for a in argv)


def remove_tree(path: Path) -> None:
    """Remove a scratch directory a driver made (bundles, logs)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(path)


def which(binary: str) -> str | None:
    return shutil.which(binary)
