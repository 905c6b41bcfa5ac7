"""What drivers and experiments exchange: an instance's spec, the instance itself, the
context every driver of one run shares, whether a runtime can run here, and the two
helpers every driver uses (`remove_tree`, `which`).

Kept apart from the Runtime base class (runtimes/base.py), which re-exports them.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from virtbench.host import cgroups, delegation

if TYPE_CHECKING:
    from virtbench.host.proc import Popen
    from virtbench.host.state import RunState
    from virtbench.measure.probe import ProbeListener
    from virtbench.paths import Paths
    from virtbench.runtimes.daemon import Daemons
    from virtbench.runtimes.network import BridgeNetwork

PROBE_PLACEHOLDER = "{probe}"


def with_probe(argv: tuple[str, ...], addr: str) -> tuple[str, ...]:
    """`argv` with PROBE_PLACEHOLDER replaced by the probe's address `addr`."""
    return tuple(addr if a == PROBE_PLACEHOLDER else a for a in argv)


PROBE_MOUNT = "/run/vb"  # where the probe socket directory appears inside containers
DATA_MOUNT = "/data"  # an instance's own writable directory on disk (InstanceSpec.data)


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
    # not here by the host's own settings (a running service's configuration, which
    # virtbench never changes), not for want of something the set-up installs
    host_settings: bool = False


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
    pids_limit: int | None = None  # most tasks (processes + threads) the instance may have
    data: bool = False  # a fresh directory on the host's disk at DATA_MOUNT (not tmpfs)
    sysctls: tuple[tuple[str, str], ...] = ()  # the run's sysctl profile (host/sysctl.py)
    control: bool = False  # to be paused or checkpointed (a QEMU gets its QMP socket)
    agent: bool = False  # commands will be run in it (a VM boots Linux with vb-agent)


@dataclass
class PendingLaunch:
    """A burst's launcher command not waited for yet (`launcher.launch` leaves it,
    `Runtime.finish_launch` waits for it): what it was, its timeout, the hint on failure."""

    what: str
    timeout: float
    hint: str


@dataclass
class ConsoleSeen:
    """What an instance's console said, as its reader saw it (console.py): VMs' and
    wasmtime's."""

    t_first_output_ns: int | None = None  # its first byte (a VM's first sign of life)
    t_ready_ns: int | None = None  # its ready line (host monotonic ns)
    hello: bool = False  # the minimal guest said hello (its workload ran)
    # a Linux guest said how its workload ended, or an image its program (its preset's
    # `exited` line)
    guest_status: int | None = None
    t_halted_ns: int | None = None  # an image said it halted (its preset's `halted` line)


@dataclass(frozen=True)
class NoState:
    """The state of an instance whose driver keeps nothing of its own."""


S = TypeVar("S")


@dataclass
class Instance(Generic[S]):
    """One running (or finished) thing a runtime started. What every instance has is a
    field here; what one driver's family keeps is its own typed state, `own` (the
    driver's `State`, made with the instance)."""

    spec: InstanceSpec
    runtime: str
    log_path: Path
    argv: tuple[str, ...] = ()
    t_spawn_ns: int = 0
    t_started_ns: int = 0
    # the launch's phases a driver marks, in order: (name, host monotonic ns at its end);
    # the first begins at t_spawn_ns (a pod's sandbox, its container's create and start)
    phases: list[tuple[str, int]] = field(default_factory=list)
    t_exit_ns: int | None = None
    exit_code: int | None = None
    address: str | None = None
    netns: Path | None = None
    proc: Popen | None = None
    stopped: bool = False
    binds: list[tuple[Path, str]] = field(default_factory=list)
    data_dir: Path | None = None  # the host directory behind DATA_MOUNT
    side_log: Path | None = None  # a VMM's own messages, apart from the guest's console
    # a burst's launch in two halves (Runtime.spawn_launch, finish_launch)
    defer_launch: bool = False
    pending_launch: PendingLaunch | None = None
    paused: bool = False  # frozen by its Pause (thawed before it is stopped)
    beat_as: str | None = None  # a restored copy's heartbeats carry its source's name
    console: ConsoleSeen = field(default_factory=ConsoleSeen)
    own: S = field(kw_only=True)  # its driver's `State()`: what that family keeps

    @property
    def name(self) -> str:
        return self.spec.name

    def log_tail(self, lines: int = 5) -> str:
        """The console's last lines (joined by " | "), then the VMM's own, if it said any;
        a console that says its guest crashed is quoted at its crash line first."""
        out = _tail(self.log_path, lines)
        crash = crash_line(self.log_path)
        if crash and crash not in out:
            out = f"crashed: {crash} ... {out}"
        elif crash:
            out = f"crashed: {out}"
        side = _tail(self.side_log, lines) if self.side_log is not None else ""
        if side:
            return f"{out or '(no console output)'}; the VMM said: {side}"
        return out


# what a guest's console says when it crashed: a kernel's panic, Unikraft's CRIT lines and
# failed assertions, an exception dump
CRASH_RE = re.compile(
    r"kernel panic|\bpanic\b|assertion fail|\bCRIT\b|\bOops\b|"
    r"general protection fault|unhandled (trap|exception)",
    re.I,
)


def crash_line(path: Path) -> str | None:
    """The console's first line that says the guest crashed, if one does."""
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    return next((ln.strip() for ln in text if CRASH_RE.search(ln)), None)


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())


@dataclass
class RuntimeContext:
    """What every driver of one run shares (passed in, never read from globals)."""

    run_id: str
    state: RunState
    paths: Paths
    layout: cgroups.Layout
    probe: ProbeListener | None = None
    bridge: BridgeNetwork | None = None
    rootfs: Path | None = None  # the run's artifact rootfs, for engines that import it
    runs_commands: bool = False  # the run execs into instances (a VM boots Linux for it)
    daemons: Daemons = field(init=False)

    def __post_init__(self) -> None:
        from virtbench.runtimes.daemon import Daemons

        self.daemons = Daemons(self.state)
        delegation.ensure_parents(self.layout)  # the run holds its lock: no clean removes them

    @property
    def scratch(self) -> Path:
        return self.state.dir


class NoOptions(BaseModel):
    """Driver options: none (the default for drivers without a spec table of their own)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def remove_tree(path: Path) -> None:
    """Remove a scratch directory a driver made (bundles, logs)."""
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(path)


def which(binary: str) -> str | None:
    return shutil.which(binary)
