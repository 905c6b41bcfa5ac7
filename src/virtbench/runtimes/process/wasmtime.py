"""`wasmtime`: WASI builds of virtbench's own programs run by the wasmtime CLI, one
module per host process in the instance's cgroups.

The artifact holds each program's WASI build (`/wasm/<program>.wasm`, compiled by
guest/Makefile with Debian's clang and wasi-libc). At setup, wasmtime compiles each once,
ahead of time, into the cache (`wasmtime compile`, keyed by module and wasmtime version),
and every instance loads that code (`--allow-precompiled`): how wasm sandboxes start
fast, and no instance pays for, or leaves behind, a compile cache of its own.

WASI preview 1 has no sockets, so the ready signal is a line on the module's stdout
(`VB-READY <name>`, and the beat workload's `VB-BEAT` lines), read by a thread as a VM's
console is (console.py). The module has no network (`none`), sees only the
directories given to it (the data directory, at /data) and no host file else; wasmtime
runs it in virtbench's cgroups through vb-cgexec, so memory limits, pause (the cgroup
freezer) and clean-up are as for native. It cannot be entered (no exec, so no time to a
first command either) and has no checkpoint: both say so. The image is the modules.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel

from virtbench.artifacts.rootfs import WASM_DIR, WASM_PROGRAMS
from virtbench.errors import InstanceError, VirtbenchError
from virtbench.host import proc
from virtbench.runtimes.attach import Attach
from virtbench.runtimes.base import Availability, Family, Instance, RuntimeContext, which
from virtbench.runtimes.console import Console
from virtbench.runtimes.controls import Exec, Snapshot
from virtbench.runtimes.model import with_probe
from virtbench.runtimes.process.native import Native

STDOUT = "fd:1"  # the ready probe's address inside: a line on stdout (vb-probe.h)


class WasmExec(Exec):
    why = (
        "a WASI module cannot be entered: wasmtime runs one module per process, with "
        "no way to run another command inside it"
    )


class WasmSnapshot(Snapshot):
    why = "wasmtime has no checkpoint/restore of a running module"


class WasmAttach(Attach):
    """The ready probe is a line on the module's stdout: no socket to reach."""

    def probe(self, inst: Instance, network: str) -> tuple[str, ...]:
        del network
        return with_probe(inst.spec.argv, STDOUT)


def version_of(binary: str) -> str:
    """`wasmtime --version`'s version ("49.0.3"); VirtbenchError when it does not answer."""
    res = proc.run([binary, "--version"], check=False, timeout=30)
    words = res.stdout.split()
    if res.returncode != 0 or len(words) < 2 or words[0] != "wasmtime":
        raise VirtbenchError(f"{binary} --version: {(res.stderr or res.stdout).strip()}")
    return words[1]


class Wasmtime(Native):
    name = "wasmtime"
    typical_launch_s = 0.01  # start + stop here without earlier boots
    family = Family.SANDBOX
    description = "WASI module run by wasmtime (precompiled), in its own cgroup"
    networks: ClassVar[tuple[str, ...]] = ("none",)
    Exec = WasmExec  # pause: the cgroup freezer (Runtime's)
    Snapshot = WasmSnapshot
    Attach = WasmAttach

    def __init__(self, ctx: RuntimeContext, *args: Any, **kwargs: Any) -> None:
        super().__init__(ctx, *args, **kwargs)
        self.console = Console(ctx)  # the module's stdout, where it says ready
        self._binary = "wasmtime"  # its path, found at set-up
        self._compiled: dict[str, Path] = {}

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        base = super().available(options)
        if not base.ok:
            return base
        binary = which("wasmtime")
        if binary is None:
            return Availability(
                False,
                reason="wasmtime not on PATH",
                fix="make wasmtime (scripts/install-wasmtime.sh)",
            )
        try:
            return Availability(True, version=version_of(binary))
        except VirtbenchError as exc:
            return Availability(False, reason=str(exc), fix="make wasmtime")

    @classmethod
    def cannot_run(cls, workload: str, options: BaseModel | None = None) -> str | None:
        from virtbench import workloads
        from virtbench.workloads import attackers

        if attackers.of_workload(workload) is not None:
            return f"{cls.name} cannot run {workload}: the attackers have no WASI build"
        wl = workloads.get(workload)
        missing = [p for p in wl.needs.static_programs if p not in WASM_PROGRAMS]
        if wl.ends == "serve" or missing or not wl.needs.static_programs:
            return (
                f"{cls.name} cannot run {workload}: WASI preview 1 has no sockets, "
                f"and only {', '.join(WASM_PROGRAMS)} have WASI builds"
            )
        if wl.needs.servers:
            return f"{cls.name} cannot run {workload}: it runs host programs, which are not WASI"
        return None

    def conditions(self) -> dict[str, Any]:
        return {
            "module": "precompiled (wasmtime compile), --allow-precompiled",
            "wasi": "preview1 (no sockets), /data preopened only",
            "confinement": "wasm in a host process, own cgroup",
        }

    def _setup(self) -> None:
        super()._setup()
        self._binary = which("wasmtime") or "wasmtime"
        cache = self.ctx.paths.cache / "wasmtime" / version_of(self._binary)
        self._compiled = {p: self._precompile(p, cache) for p in WASM_PROGRAMS}

    def _precompile(self, program: str, cache: Path) -> Path:
        """The program's module compiled for this wasmtime, once per module and version:
        `<cache>/<digest>-<program>.cwasm`, `cache` being the version's directory."""
        module = self._module(program)
        digest = hashlib.sha256(module.read_bytes()).hexdigest()[:16]
        out = cache / f"{digest}-{program}.cwasm"
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_name(f"{out.name}.tmp{os.getpid()}")
            proc.run(
                [self._binary, "compile", "-o", str(tmp), str(module)],
                timeout=300,
                what=f"wasmtime compile {program}",
            )
            os.replace(tmp, out)
        return out

    def _module(self, program: str) -> Path:
        if self.ctx.rootfs is None:
            raise VirtbenchError(f"{self.label}: no artifact built")
        module = self.ctx.rootfs / WASM_DIR / f"{program}.wasm"
        if not module.is_file():
            raise VirtbenchError(
                f"{self.label}: the artifact has no {WASM_DIR}/{module.name}: "
                "rebuild the guest programs (make -C guest)"
            )
        return module

    def _command(self, inst: Instance) -> list[str]:
        """wasmtime run on the program's precompiled module, with the instance's
        directories preopened at their paths inside."""
        program, *args = inst.argv
        name = program.rsplit("/", 1)[-1]
        if name not in self._compiled:
            raise InstanceError(f"{self.label}: {program} has no WASI build")
        dirs = [f"--dir={host}::{inside}" for host, inside in inst.binds]
        return [
            self._binary,
            "run",
            "--allow-precompiled",
            *dirs,
            "--env",
            f"VIRTBENCH_INSTANCE={inst.name}",
            str(self._compiled[name]),
            *args,
        ]

    def _start(self, inst: Instance, detach: bool) -> None:
        del detach
        argv = self.launch_argv(inst)
        with open(inst.log_path, "ab") as log:
            self.process.spawn(inst, argv, proc.PIPE, log.fileno())
        self.console.start(inst)

    def _wait(self, inst: Instance, timeout: float) -> int:
        assert inst.proc is not None
        rc = proc.wait(inst.proc, timeout)
        inst.t_exit_ns = time.monotonic_ns()
        self.console.join(inst)
        return rc

    def _stop(self, inst: Instance) -> None:
        super()._stop(inst)
        with contextlib.suppress(OSError):
            self.console.end(inst)

    def image_size(self) -> tuple[int, str] | None:
        """The WASI modules as built (.wasm), not their precompiled code."""
        if self.ctx.rootfs is None:
            return None
        sizes = [(self.ctx.rootfs / WASM_DIR / f"{p}.wasm").stat().st_size for p in WASM_PROGRAMS]
        return sum(sizes), f"{len(sizes)} WASI modules (.wasm)"
