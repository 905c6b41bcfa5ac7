"""`native`: the workload as a plain host process in its own cgroup (the baseline).

Programs named by their path inside the rootfs (`/bin/vb-hello`) run from the host copy
of the artifact, so native runs exactly the same binary the containers do; `/data` is
the instance's data directory.

The network is the same kind a container gets, so native is a clean baseline: `none` a
new, empty network namespace (unshared by the launcher, as an OCI runtime does), `bridge`
the namespace on the run's bridge, `host` the host's own. The ready probe reaches the host
over loopback (`host`), the bridge, or (`none`) the listener's unix socket by its host path.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import psutil
from pydantic import BaseModel

from virtbench.errors import InstanceError
from virtbench.host import cgroups, proc
from virtbench.runtimes import controls
from virtbench.runtimes.attach import Attach
from virtbench.runtimes.base import (
    DATA_MOUNT,
    PROBE_PLACEHOLDER,
    Availability,
    Family,
    Instance,
    Runtime,
    RuntimeContext,
)
from virtbench.runtimes.controls import CommandExec, Undriven
from virtbench.runtimes.model import with_probe

TERM_GRACE_S = 2.0


class NativeAttach(Attach):
    """In a namespace of its own without a network, the probe's unix socket by its host
    path (no mount namespace to bind it into); otherwise as for any runtime."""

    def probe(self, inst: Instance, network: str) -> tuple[str, ...]:
        probe = self.rt.ctx.probe
        if (
            self.rt.family is not Family.PROCESS
            or network != "none"
            or probe is None
            or PROBE_PLACEHOLDER not in inst.spec.argv
        ):
            return super().probe(inst, network)
        addr = f"unix:{probe.unix_dir / probe.unix_name}"
        return with_probe(inst.spec.argv, addr)


class NativeExec(CommandExec):
    """nsenter into the namespaces of the instance's process (for a native one, the
    host's own), with the artifact's programs at their host paths."""

    rt: Native

    def argv(self, inst: Instance, argv: list[str]) -> list[str]:
        return [
            "nsenter",
            "-t",
            str(self.rt.leader(inst)),
            "-a",
            "--",
            *self.rt.host_argv(inst, argv),
        ]


class LeaderExec(CommandExec):
    """nsenter into every namespace of the instance's leader (`rt.leader`: a container's
    first process, whose root the command then sees: nspawn, bwrap)."""

    def argv(self, inst: Instance, argv: list[str]) -> list[str]:
        return ["nsenter", "-t", str(self.rt.leader(inst)), "-a", "--", *argv]


class NativeSnapshot(Undriven):
    why = "virtbench does not checkpoint a native process (yet)"


@dataclass
class ProcessState:
    """What a process driver keeps of an instance: the container's first process inside
    its own pid namespace (nspawn, bwrap), once found."""

    leader: int | None = None


class Native(Runtime):
    """A host process in its own cgroups: the launch every process driver shares (bwrap,
    nspawn, wasmtime fill in `_command` and, where theirs differs, `_launch_net`); the
    process itself is `self.process`, a `HostProcess`."""

    name = "native"
    typical_launch_s = 0.01  # start + stop here without earlier boots
    spawns_launcher = True
    family = Family.PROCESS
    description = "host process in its own cgroup"
    networks: ClassVar[tuple[str, ...]] = ("none", "host", "bridge")
    # pause: the cgroup freezer (Runtime's); the sandboxes built on it give their own
    Exec: ClassVar[type[controls.Exec]] = NativeExec
    Snapshot: ClassVar[type[controls.Snapshot]] = NativeSnapshot
    Attach: ClassVar[type[Attach]] = NativeAttach
    State = ProcessState
    # seconds a TERM to the first process alone gets before the TERM to its group (0:
    # none): a launcher that ends what it started itself (nspawn)
    leader_grace: ClassVar[float] = 0.0

    def __init__(self, ctx: RuntimeContext, *args: Any, **kwargs: Any) -> None:
        super().__init__(ctx, *args, **kwargs)
        self.process = HostProcess(ctx, self.label, self.leader_grace)

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        return HostProcess.available()

    def _command(self, inst: Instance) -> list[str]:
        """What vb-cgexec execs inside the instance's cgroups."""
        return self.host_argv(inst)

    def launch_argv(self, inst: Instance) -> list[str]:
        """What `_start` spawns for a prepared instance: the launcher into its cgroups,
        then the command it execs (also what a user would type: bench/byhand.py)."""
        return [*self.process.launcher(inst, self._launch_net(inst)), *self._command(inst)]

    def _launch_net(self, inst: Instance) -> list[str]:
        """What vb-cgexec does of the network (native only: nspawn does its own): a new
        namespace for `none`, the bridge's for `bridge`."""
        if self.family is not Family.PROCESS:
            return []
        network = self.effective_network(inst.spec.network)
        if network == "none":
            return ["-N"]
        if network == "bridge" and inst.netns is not None:
            return ["-n", str(inst.netns)]
        return []

    def host_argv(self, inst: Instance, argv: list[str] | None = None) -> list[str]:
        """The argv (default: the instance's) with paths inside the instance replaced by
        their host copies: the artifact's files and non-empty directories (not /tmp,
        /proc, ...), and the data directory. Also the value of `--opt=/path` and
        `key=/path` arguments."""
        root = inst.spec.rootfs

        def host(path: str) -> str:
            if not path.startswith("/"):
                return path
            if inst.data_dir is not None and (
                path == DATA_MOUNT or path.startswith(DATA_MOUNT + "/")
            ):
                return str(inst.data_dir) + path[len(DATA_MOUNT) :]
            p = root / path.lstrip("/")
            inside = p.is_file() or (p.is_dir() and any(p.iterdir()))
            return str(p) if inside else path

        out = []
        for arg in inst.argv if argv is None else argv:
            key, eq, value = arg.partition("=")
            out.append(key + eq + host(value) if eq and value.startswith("/") else host(arg))
        return out

    def _prepare(self, inst: Instance) -> None:
        self.process.prepare(inst)

    def _start(self, inst: Instance, detach: bool) -> None:
        # vb-cgexec joins the cgroups and execs the workload: a vfork/exec launch, where
        # joining from a preexec_fn would force a full fork of this process (~3 ms).
        argv = self.launch_argv(inst)
        with open(inst.log_path, "ab") as log:
            inst.t_spawn_ns = time.monotonic_ns()  # the command built: the spawn itself
            self.process.spawn(inst, argv, log.fileno(), log.fileno())

    def leader(self, inst: Instance) -> int:
        """The instance's first process (vb-cgexec exec'd the workload)."""
        return self.process.pid(inst)

    def contained(self, inst: Instance[ProcessState], what: str, skip: str = "") -> int:
        """The first process under the instance's own (nspawn, bwrap) in a pid namespace
        of its own, other than one named `skip` (bwrap's reaper): the container's first
        process, found once; InstanceError naming `what` when there is none."""
        if inst.own.leader is None:
            outer = self.process.pid(inst)
            mine = os.readlink(f"/proc/{outer}/ns/pid")
            for child in psutil.Process(outer).children(recursive=True):
                with contextlib.suppress(OSError, psutil.Error):
                    if os.readlink(f"/proc/{child.pid}/ns/pid") != mine and (
                        not skip or child.name() != skip
                    ):
                        inst.own.leader = child.pid
                        break
            else:
                raise InstanceError(f"{self.label}: {inst.name}'s {what} not found")
        return inst.own.leader

    def _stop(self, inst: Instance) -> None:
        self.process.stop(inst)


class HostProcess:
    """The one host process of each instance of a driver, in cgroups of its own: the
    cgroups made untimed (`prepare`), the launcher that joins them (vb-cgexec,
    `launcher`), the spawn, and its end, TERM then KILL (`stop`; the cgroups themselves
    go with the instance, Lifecycle.stop). Native's, and so bwrap's, nspawn's and
    wasmtime's; a VM's VMM is one too (vm/vmm.py). It holds each instance's cgroups from
    `prepare` until the spawn (`dirs`)."""

    def __init__(self, ctx: RuntimeContext, label: str, leader_grace: float = 0.0) -> None:
        self.ctx = ctx
        self.label = label
        self.leader_grace = leader_grace  # s its leader alone gets TERM first (nspawn)
        self.dirs: dict[str, list[Path]] = {}

    @staticmethod
    def available() -> Availability:
        """Whether this host gives a process cgroups of its own (and virtbench the right)."""
        layout = cgroups.Layout.detect()
        if layout.version == 0:
            return Availability(False, reason="no cgroup hierarchy mounted", fix="mount cgroups")
        if os.geteuid() != 0:
            return Availability(False, reason="needs root for cgroups", fix="run as root")
        return Availability(True, version=os.uname().release)

    def prepare(self, inst: Instance) -> None:
        """Untimed, before the launch: the instance's cgroups (recorded in the ledger
        first), with its memory limit, cpuset and pids limit."""
        self.ctx.state.record("cgroup", inst.name)
        mem = inst.spec.memory_mib * 1024 * 1024 if inst.spec.memory_mib else None
        spec = inst.spec
        self.dirs[inst.name] = cgroups.create(
            self.ctx.layout, inst.name, mem, spec.cpus, spec.pids_limit
        )

    def prepared(self, inst: Instance) -> bool:
        """Whether `inst`'s cgroups are made and its process not yet spawned."""
        return inst.name in self.dirs

    def launcher(self, inst: Instance, net: list[str]) -> list[str]:
        """vb-cgexec: joins the prepared cgroups and, with `net` (`-N`: a new network
        namespace, `-n <path>`: that one), a network namespace, then execs what follows."""
        dirs = self.dirs[inst.name]
        return [str(inst.spec.rootfs / "bin" / "vb-cgexec"), *net, *map(str, dirs), "--"]

    def spawn(self, inst: Instance, argv: list[str], stdout: int, stderr: int) -> None:
        """Start `argv` (a `launcher` line) as `inst`'s process (`inst.proc`), in a
        process group of its own, with the environment `virtbench clean` finds it by."""
        env = {"PATH": "/usr/bin:/bin", "VIRTBENCH_INSTANCE": inst.name}
        self.dirs.pop(inst.name)
        inst.proc = proc.spawn(argv, stdout=stdout, stderr=stderr, env=env)

    def pid(self, inst: Instance) -> int:
        """The process spawned for `inst`, while it runs."""
        if inst.proc is None or inst.proc.poll() is not None:
            raise InstanceError(f"{self.label}: {inst.name} is not running")
        return inst.proc.pid

    def stop(self, inst: Instance) -> None:
        """End `inst`'s process and its group, TERM then KILL; a process already gone,
        or never spawned, is no error."""
        self.dirs.pop(inst.name, None)
        p = inst.proc
        if p is None:
            return
        # TERM first: servers remove their pid files on the way out
        proc.stop(p, TERM_GRACE_S, leader_grace=self.leader_grace, reap=10)
        # anything else left in the instance's cgroup is killed by the base's removal
