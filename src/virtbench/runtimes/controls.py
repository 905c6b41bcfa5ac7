"""What `exec`, `pause` and `snapshot` ask of a running instance: run a command in it,
freeze and thaw it, checkpoint it to a directory and restore it from there.

Each is a capability object: a driver declares the class it uses (`Exec = OciExec`,
`Pause = CgroupFreezer`, `Snapshot = QemuSnapshot`) and Runtime makes one per driver
(`rt.exec`, `rt.pause`, `rt.snapshot`) holding that driver as `rt`. Each has a `problem()`
that says why this runtime (as configured, on this host) cannot do it, or None; the
experiments ask it first and record the reason instead of a figure. Defaults: no exec
(`Exec`); pause and resume through the cgroup freezer of the instance's cgroups
(`CgroupFreezer`: cgroup v2 `cgroup.freeze`, v1's freezer); no checkpoint (`Snapshot`).
Drivers declare subclasses with their runtime's own commands (`runc exec`, `docker
pause`, QEMU's stop/cont, `runsc checkpoint`).
"""

from __future__ import annotations

import functools
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from virtbench.errors import InstanceError
from virtbench.host import proc

if TYPE_CHECKING:
    from virtbench.runtimes.model import Instance

FREEZE_TIMEOUT_S = 10.0
TAIL = 4096  # the bytes of a command's standard output an ExecResult keeps (its last)


@dataclass(frozen=True)
class ExecResult:
    """One command run in an instance: its host-side start and end (monotonic ns: the
    exec call issued, and its exit seen with all its output read), exit status, the
    bytes of standard output that came back, standard error's tail, and standard output's
    last `TAIL` bytes (what a command reports its results in: `task`)."""

    t_start_ns: int
    t_end_ns: int
    status: int
    stdout_bytes: int
    stderr: str = ""
    stdout_tail: str = ""

    @property
    def ms(self) -> float:
        return (self.t_end_ns - self.t_start_ns) / 1e6


@functools.cache
def criu_problem() -> str:
    """Why CRIU cannot checkpoint on this host ("" when `criu check` passes)."""
    if shutil.which("criu") is None:
        return "criu is not installed (apt-get install criu)"
    try:
        res = proc.run(["criu", "check"], check=False, timeout=60)
    except Exception as exc:
        return f"criu check did not finish: {exc}"
    if res.returncode == 0:
        return ""
    # "Error (criu/vdso.c:381): vdso: Unexpected rt vDSO area bounds" ... the first says
    # what, the last what it stopped
    lines = [
        re.sub(r"^Error \([^)]*\):\s*", "", ln.strip())
        for ln in (res.stderr + res.stdout).splitlines()
        if ln.strip()
    ]
    why = "; ".join(dict.fromkeys([lines[0], lines[-1]])) if lines else f"status {res.returncode}"
    return f"criu check fails here: {why}"


class Control:
    """One capability of a driver (`rt`, the Runtime that declared it)."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt

    def problem(self) -> str | None:
        """Why this runtime cannot do it (None: it can)."""
        return None


# --- exec ------------------------------------------------------------------------------
class Exec(Control):
    """Run a command in a running instance. This base cannot, and `why` says so."""

    why: ClassVar[str] = "it has no way to run a command in a running instance"

    def problem(self) -> str | None:
        return self.why

    def problem_in(self, inst: Instance) -> str | None:
        """Why no command can be run in `inst` as it was started (None: one can)."""
        del inst
        return self.problem()

    def run(self, inst: Instance, argv: list[str], timeout: float) -> ExecResult:
        """Run `argv` (paths inside the instance) in `inst`, reading all its standard
        output; timed on the host."""
        del inst, argv, timeout
        raise InstanceError(f"{self.rt.label}: {self.problem()}")


class CommandExec(Exec):
    """Exec through a host command per call (`runc exec`, `lxc-attach`, `nsenter`): the
    subclass says which (`argv`) and in what environment (`env`)."""

    def problem(self) -> str | None:
        return None

    def argv(self, inst: Instance, argv: list[str]) -> list[str]:
        """The host command that runs `argv` (paths inside the instance) in `inst`."""
        raise NotImplementedError

    def env(self) -> dict[str, str] | None:
        """The environment of `argv`'s command (None: virtbench's own)."""
        return None

    def run(self, inst: Instance, argv: list[str], timeout: float) -> ExecResult:
        cmd = self.argv(inst, argv)
        try:  # timed from its start to its exit with all its output read; bytes, not text
            out = proc.run_bytes(cmd, timeout=timeout, env=self.env())
        except proc.CommandTimeout:  # its whole process group killed, and waited for
            raise InstanceError(
                f"{self.rt.label}: {' '.join(cmd[:2])} ... did not end in {timeout:g} s"
            ) from None
        err = out.stderr.decode(errors="replace")[-300:]
        tail = out.stdout[-TAIL:].decode(errors="replace")
        return ExecResult(out.t0_ns, out.t1_ns, out.returncode, len(out.stdout), err, tail)


# --- pause -----------------------------------------------------------------------------
class Pause(Control):
    """Freeze every process of an instance and thaw it again. A subclass gives `_pause`
    and `_resume` (the runtime's own commands); this base marks the instance paused
    between them, so that stopping it resumes it first. The runtimes' own pause commands
    freeze the instance's cgroups too, so without a freezer none can (`problem`)."""

    def problem(self) -> str | None:
        layout = self.rt.ctx.layout
        if layout.version == 1 and "freezer" not in layout.v1:
            return "the cgroup v1 freezer is not mounted"
        if layout.version == 0:
            return "no cgroup hierarchy to freeze"
        return None

    def ready(self, inst: Instance) -> None:
        """Untimed, once the instance is ready: open what pause and checkpoint go
        through (QEMU's QMP connection), so that the first one is not slower."""
        del inst

    def pause(self, inst: Instance) -> None:
        """Freeze every process of `inst`; returns once they are frozen. Until `resume`,
        the instance is marked paused: stopping it resumes it first."""
        inst.paused = True
        self._pause(inst)

    def resume(self, inst: Instance) -> None:
        """Thaw `inst` (returns once the runtime says it runs)."""
        self._resume(inst)
        inst.paused = False

    def _pause(self, inst: Instance) -> None:
        raise NotImplementedError

    def _resume(self, inst: Instance) -> None:
        raise NotImplementedError


class Cli(Protocol):
    """A driver whose engine pauses its instances by command line (`cli`: its command
    with these words, e.g. `podman pause <name>`)."""

    def cli(self, *args: str, check: bool = True, timeout: float = 120) -> proc.Result: ...


class CliPause(Pause):
    """The engine's own pause command and the one that resumes (`podman pause` and
    `unpause`, `lxc pause` and `start`), run by the driver's `cli`."""

    rt: Any  # a Runtime that is a Cli
    pause_word: ClassVar[str] = "pause"
    resume_word: ClassVar[str]

    def _pause(self, inst: Instance) -> None:
        cli: Cli = self.rt
        cli.cli(self.pause_word, inst.name, timeout=60)

    def _resume(self, inst: Instance) -> None:
        cli: Cli = self.rt
        cli.cli(self.resume_word, inst.name, timeout=60)


class CgroupFreezer(Pause):
    """The cgroup freezer on the instance's cgroups (v2: cgroup.freeze, then wait for
    cgroup.events to say so; v1: freezer.state)."""

    def _pause(self, inst: Instance) -> None:
        self.freeze(inst, True)

    def _resume(self, inst: Instance) -> None:
        self.freeze(inst, False)

    def freeze(self, inst: Instance, frozen: bool) -> None:
        layout = self.rt.ctx.layout
        names = self.rt.cgroup_names(inst)
        ctrl = "freezer" if layout.version == 1 else "memory"  # v2: the one cgroup
        dirs = [layout.controller_dir(ctrl, n) for n in names]
        for d in dirs:
            if layout.version == 1:
                (d / "freezer.state").write_text("FROZEN" if frozen else "THAWED")
            else:
                (d / "cgroup.freeze").write_text("1" if frozen else "0")
        for d in dirs:
            _await_freezer(d, frozen, layout.version)


def _await_freezer(d: Path, frozen: bool, version: int) -> None:
    deadline = time.monotonic() + FREEZE_TIMEOUT_S
    pause = 0.0002
    while True:
        if version == 1:
            state = (d / "freezer.state").read_text().strip()
            done = state == ("FROZEN" if frozen else "THAWED")
        else:
            events = dict(ln.split() for ln in (d / "cgroup.events").read_text().splitlines())
            done = events.get("frozen") == ("1" if frozen else "0")
        if done:
            return
        if time.monotonic() > deadline:
            what = "freeze" if frozen else "thaw"
            raise InstanceError(f"{d.name}: the cgroup did not {what} in {FREEZE_TIMEOUT_S:g} s")
        time.sleep(pause)
        pause = min(pause * 2, 0.005)


# --- snapshot --------------------------------------------------------------------------
class Snapshot(Control):
    """Checkpoint a running instance to a directory and restore it from there. This
    base cannot, and `why` says so. `copies`: copies restored from one checkpoint can be
    told apart (a VM's beat on its own console), so `restore_copy` may be asked."""

    why: ClassVar[str] = "it has no checkpoint/restore"
    copies: ClassVar[bool] = False

    def problem(self) -> str | None:
        return self.why

    def copies_problem(self) -> str | None:
        """Why copies of one checkpoint cannot be restored and told apart (None: can)."""
        if (why := self.problem()) is not None or self.copies:
            return why
        return (
            "its copies of one checkpoint would all beat as the instance checkpointed "
            "(one name on the probe socket), so they cannot be told apart"
        )

    def restore_copy(self, copy: Instance, image_dir: Path, source: Instance) -> None:
        """Start `copy` (prepared, never launched) from `source`'s checkpoint in
        `image_dir`; it beats as `source` did (its token and numbers, its name on the
        console), and returns once the runtime says it runs."""
        copy.beat_as = source.name
        self.restore(copy, image_dir)

    def checkpoint(self, inst: Instance, image_dir: Path) -> None:
        """Write `inst`'s state to `image_dir` (made empty by the caller); the instance is
        gone afterwards (its processes ended; `restore` brings it back)."""
        del inst, image_dir
        raise InstanceError(f"{self.rt.label}: {self.problem()}")

    def restore(self, inst: Instance, image_dir: Path) -> None:
        """Start `inst` again from `image_dir`; returns once the runtime says it runs."""
        del inst, image_dir
        raise InstanceError(f"{self.rt.label}: {self.problem()}")


class Undriven(Snapshot):
    """A runtime that could checkpoint through CRIU, but virtbench does not drive it:
    CRIU's own problem on this host first, else `why`."""

    def problem(self) -> str | None:
        return criu_problem() or self.why
