"""What `exec`, `pause` and `snapshot` ask of a running instance: run a command in it,
freeze and thaw it, checkpoint it to a directory and restore it from there.

A mixin of the Runtime base class. Each operation has a `cannot_*` that says why this
runtime (as configured, on this host) cannot do it, or None; the experiments ask it first
and record the reason instead of a figure. Defaults: no exec; pause and resume through
the cgroup freezer of the instance's cgroups (cgroup v2 `cgroup.freeze`, v1's freezer);
no checkpoint. Drivers override them with their runtime's own commands (`runc exec`,
`docker pause`, QEMU's stop/cont, `runsc checkpoint`).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from virtbench.errors import InstanceError
from virtbench.host import proc

if TYPE_CHECKING:
    from virtbench.runtimes.model import Instance, RuntimeContext

FREEZE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ExecResult:
    """One command run in an instance: its host-side start and end (monotonic ns: the
    exec call issued, and its exit seen with all its output read), exit status, and the
    bytes of standard output that came back."""

    t_start_ns: int
    t_end_ns: int
    status: int
    stdout_bytes: int
    stderr: str = ""

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
    lines = [re.sub(r"^Error \([^)]*\):\s*", "", ln.strip())
             for ln in (res.stderr + res.stdout).splitlines() if ln.strip()]  # fmt: skip
    why = "; ".join(dict.fromkeys([lines[0], lines[-1]])) if lines else f"status {res.returncode}"
    return f"criu check fails here: {why}"


class Controls:
    """The operations on a running instance (mixed into Runtime)."""

    ctx: RuntimeContext
    label: str

    def ready_controls(self, inst: Instance) -> None:
        """Untimed, once the instance is ready: open what pause and checkpoint go
        through (QEMU's QMP connection), so that the first one is not slower."""
        del inst

    # --- exec ------------------------------------------------------------------------
    def cannot_exec(self) -> str | None:
        """Why a command cannot be run in this runtime's running instances (None: it can)."""
        return "it has no way to run a command in a running instance"

    def exec_argv(self, inst: Instance, argv: list[str]) -> list[str]:
        """The host command that runs `argv` (paths inside the instance) in `inst`."""
        raise InstanceError(f"{self.label}: {self.cannot_exec()}")

    def exec_env(self) -> dict[str, str] | None:
        """The environment of exec_argv's command (None: virtbench's own)."""
        return None

    def exec_in(self, inst: Instance, argv: list[str], timeout: float) -> ExecResult:
        """Run `argv` in `inst`, reading all its standard output; timed on the host."""
        cmd = self.exec_argv(inst, argv)
        t0 = time.monotonic_ns()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=self.exec_env())  # fmt: skip
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise InstanceError(f"{self.label}: {' '.join(cmd[:2])} ... did not end in "
                                f"{timeout:g} s") from None  # fmt: skip
        t1 = time.monotonic_ns()
        return ExecResult(t0, t1, p.returncode, len(out), err.decode(errors="replace")[-300:])

    # --- pause ---------------------------------------------------------------------------
    def cannot_pause(self) -> str | None:
        """Why this runtime's instances cannot be paused (None: they can)."""
        layout = self.ctx.layout
        if layout.version == 1 and "freezer" not in layout.v1:
            return "the cgroup v1 freezer is not mounted"
        if layout.version == 0:
            return "no cgroup hierarchy to freeze"
        return None

    def pause(self, inst: Instance) -> None:
        """Freeze every process of `inst`; returns once they are frozen. Until `resume`,
        the instance is marked paused: stopping it resumes it first."""
        inst.extra["paused"] = True
        self._pause(inst)

    def resume(self, inst: Instance) -> None:
        """Thaw `inst` (returns once the runtime says it runs)."""
        self._resume(inst)
        inst.extra.pop("paused", None)

    def _pause(self, inst: Instance) -> None:
        self._freeze(inst, True)

    def _resume(self, inst: Instance) -> None:
        self._freeze(inst, False)

    def _freeze(self, inst: Instance, frozen: bool) -> None:
        """The cgroup freezer on the instance's cgroups (v2: cgroup.freeze, then wait for
        cgroup.events to say so; v1: freezer.state)."""
        layout = self.ctx.layout
        names = self.cgroup_names(inst)  # type: ignore[attr-defined]  # Runtime's
        ctrl = "freezer" if layout.version == 1 else "memory"  # v2: the one cgroup
        dirs = [layout.controller_dir(ctrl, n) for n in names]
        for d in dirs:
            if layout.version == 1:
                (d / "freezer.state").write_text("FROZEN" if frozen else "THAWED")
            else:
                (d / "cgroup.freeze").write_text("1" if frozen else "0")
        for d in dirs:
            _await_freezer(d, frozen, layout.version)

    # --- snapshot --------------------------------------------------------------------------
    def cannot_snapshot(self) -> str | None:
        """Why this runtime's instances cannot be checkpointed and restored (None: they can)."""
        return "it has no checkpoint/restore"

    def checkpoint(self, inst: Instance, image_dir: Path) -> None:
        """Write `inst`'s state to `image_dir` (made empty by the caller); the instance is
        gone afterwards (its processes ended; `restore` brings it back)."""
        raise InstanceError(f"{self.label}: {self.cannot_snapshot()}")

    def restore(self, inst: Instance, image_dir: Path) -> None:
        """Start `inst` again from `image_dir`; returns once the runtime says it runs."""
        raise InstanceError(f"{self.label}: {self.cannot_snapshot()}")


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
