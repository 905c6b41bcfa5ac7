"""A VM driver's VMMs: the one host process of each of its instances (QEMU, Firecracker,
Cloud Hypervisor, a Solo5 tender), owned here from its launch to its end.

A `Vmm` is made once per driver (`rt.vmm`, vm/base.py) and does what is the same for every
VMM: its process runs in the instance's cgroups, launched through vb-cgexec as native
launches a process (process/native.py's `HostProcess`); its stdout is the guest's serial
console, read by a thread per instance (runtimes/console.py's `Console`), and its stderr
goes to a log of its own; it is waited for, and ended TERM then KILL, for good (`stop`)
or for a restore to start another in the same cgroups (`prepare` again, `spawn`). What
differs between VMMs (the command line, a configuration over an API socket) is the
driver's: the Vm base asks it and hands the result here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from virtbench.host import proc
from virtbench.runtimes.console import Console, GuestEnd
from virtbench.runtimes.model import Instance, RuntimeContext
from virtbench.runtimes.process.native import TERM_GRACE_S, HostProcess


class Vmm:
    """The VMM process of each instance of a driver: cgroups, spawn, console, wait, end."""

    def __init__(self, ctx: RuntimeContext, label: str) -> None:
        self.process = HostProcess(ctx, label)
        self.console = Console(ctx)

    def prepare(self, inst: Instance) -> None:
        """Untimed: the instance's cgroups, which its VMM (and a restore's) runs in."""
        self.process.prepare(inst)

    def prepared(self, inst: Instance) -> bool:
        """Whether `inst`'s cgroups are made for a VMM not yet spawned."""
        return self.process.prepared(inst)

    def argv(self, inst: Instance, command: list[str]) -> list[str]:
        """The launch of `command` (the VMM's argv): vb-cgexec into the instance's
        cgroups only (a VM's network is its tap), then the VMM."""
        return [*self.process.launcher(inst, []), *command]

    def spawn(self, inst: Instance, argv: list[str], log: Path) -> None:
        """Start the VMM (`argv`, as `argv` gave it), its stdout a pipe (its console: `read`
        it) and its own messages going to `log` (`inst.side_log`)."""
        inst.side_log = log
        with open(log, "ab") as messages:
            self.process.spawn(inst, argv, proc.PIPE, messages.fileno())

    def read(
        self,
        inst: Instance,
        pattern: str | None = None,
        end: GuestEnd | None = None,
        halted: Callable[[Instance, int], None] | None = None,
    ) -> None:
        """Read the console of `inst`'s VMM from now on, in a thread of its own
        (`Console.start`: `pattern`, `end` and `halted`)."""
        self.console.start(inst, pattern, end, halted)

    def ready(self, inst: Instance, t: int) -> None:
        """The guest is ready since `t` (its port answered, for an image that serves)."""
        self.console.ready(inst, t)

    def wait(self, inst: Instance, timeout: float) -> int:
        """The VMM's exit status once it exited (its console then read to the end), with
        `inst.t_exit_ns` the moment its exit was seen."""
        assert inst.proc is not None
        rc = proc.wait(inst.proc, timeout)
        t_exit = time.monotonic_ns()
        self.console.join(inst)
        inst.t_exit_ns = t_exit
        return rc

    def end_idle(self, inst: Instance) -> None:
        """End a VMM that stays up, idle, after its guest halted (QEMU under Rumprun):
        TERM, then KILL after the grace, by the process spawned here; its console reader
        sees the end (it may be the caller: this returns without joining it)."""
        if inst.proc is not None:
            proc.stop(inst.proc, TERM_GRACE_S)

    def stop(self, inst: Instance) -> None:
        """End the VMM, TERM then KILL, and its console reader; its cgroups stay (the
        instance's stop removes them; a restore starts its new VMM there)."""
        self.process.stop(inst)
        self.console.end(inst)
