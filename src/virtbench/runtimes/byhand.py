"""What a user would type by hand to do what a driver does: for checking virtbench's own
timing against hyperfine (bench/boot_vs_hyperfine.py). A mixin of Runtime: a driver says
its command in `_command_line` and, where needed, what to run before each try.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from virtbench.runtimes.model import Instance, InstanceSpec


class ByHand:
    """`command_line`, `_command_line`, `prepare_command` of a Runtime."""

    # The hyperfine check times `command_line`: the by-hand foreground run of `hello`, or
    # -- where that command returns long after the exit (LXD) -- the detached launch of
    # `sleep`, against `spawn_to_started`.
    hyperfine_detached: ClassVar[bool] = False
    label: str

    def command_line(self, spec: InstanceSpec) -> tuple[Instance, list[str], dict[str, str]]:
        """(instance, argv, extra environment) a user would type to do by hand what
        `run_to_exit(spec)` does -- for checking virtbench's timing against hyperfine.
        The instance is prepared but not started; `stop` it afterwards."""
        inst = self._begin(spec)  # type: ignore[attr-defined]
        try:
            self._prepare(inst)  # type: ignore[attr-defined]
            argv, env = self._command_line(inst)
        except BaseException:
            with contextlib.suppress(Exception):
                self.stop(inst)  # type: ignore[attr-defined]
            raise
        return inst, argv, env

    def _command_line(self, inst: Instance) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError(f"{self.label}: no command-line equivalent")

    def prepare_command(self, inst: Instance) -> list[str] | None:
        """What to run (untimed) before each by-hand `command_line` run, e.g. removing
        the previous instance of that name. Default: nothing."""
        del inst
        return None
