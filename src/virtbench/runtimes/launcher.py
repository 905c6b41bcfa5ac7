"""The launch of an instance as a launcher command (`crun run -d`, `lxc-start -d`): spawned
with its output in the instance's log, then waited for; and a burst's two halves of a
launch, so that one thread can issue many launcher commands back to back. A mixin of the
Runtime base class."""

from __future__ import annotations

import os
import subprocess
import time
from typing import TYPE_CHECKING

from virtbench.errors import InstanceError
from virtbench.host import proc
from virtbench.runtimes.model import Instance

if TYPE_CHECKING:
    from virtbench.runtimes.model import RuntimeContext


class Launcher:
    """Launcher commands, and a burst's split launch (mixed into Runtime)."""

    # Runtime gives _start (the driver's), _after_start and _start_failed.
    ctx: RuntimeContext

    def spawn_launch(self, inst: Instance) -> None:
        """A burst's first half of `launch` (detached): the launch call issued, timed
        (t_spawn_ns), its launcher command not waited for where the driver has one
        (`spawns_launcher`), so that one thread can issue many launches back to back."""
        inst.extra["defer_launch"] = True
        try:
            inst.t_spawn_ns = time.monotonic_ns()
            self._start(inst, True)
        except BaseException as exc:
            self._start_failed(inst, exc)
        finally:
            inst.extra.pop("defer_launch", None)

    def finish_launch(self, inst: Instance) -> None:
        """The second half: the launcher waited for (t_started_ns), then as `launch`."""
        try:
            pending = inst.extra.pop("pending_launch", None)
            if pending is not None:
                self._await_launch(inst, *pending)
            inst.t_started_ns = time.monotonic_ns()
            self._after_start(inst)
        except BaseException as exc:
            self._start_failed(inst, exc)

    def _launch(
        self,
        inst: Instance,
        argv: list[str],
        detach: bool,
        timeout: float,
        env: dict[str, str] | None = None,
        hint: str = "",
    ) -> None:
        """Spawn a launcher CLI with its output in the instance log. Foreground: keep it as
        `inst.proc`. Detached: wait for it to return (the instance then exists) and raise
        with the log's tail if it failed."""
        with open(inst.log_path, "ab") as log:
            inst.proc = proc.spawn(argv, stdout=log.fileno(), stderr=log.fileno(), env=env)
        if not detach:
            return
        what = f"{os.path.basename(argv[0])} {inst.name}"
        if inst.extra.pop("defer_launch", False):  # a burst's: waited for by finish_launch
            inst.extra["pending_launch"] = (what, timeout, hint)
            return
        self._await_launch(inst, what, timeout, hint)

    def _await_launch(self, inst: Instance, what: str, timeout: float, hint: str) -> None:
        """Wait for a detached launch's launcher to return; raise with the log's tail if
        it failed."""
        assert inst.proc is not None
        try:
            rc = proc.wait(inst.proc, timeout)
        except subprocess.TimeoutExpired:
            raise InstanceError(f"{what} did not return in {timeout:g} s{hint}") from None
        inst.proc = None
        if rc != 0:
            raise InstanceError(f"{what} failed: {inst.log_tail()}")
