"""`bwrap`: bubblewrap (Flatpak's sandbox, and the Linux sandbox of several coding agents)
with the artifact rootfs as its root, read-only, and pid, ipc, uts and (network `none`)
net namespaces of its own.

bwrap has no daemon, no state and no cgroups of its own, so virtbench starts it the way
it starts `native` processes: vb-cgexec joins the instance's cgroups (memory limit,
cpuset, pids limit) and, on the bridge, its network namespace, then execs bwrap, which
stays in the foreground for the sandbox's life. By default bwrap keeps a reaper as PID 1
of the new pid namespace and the workload runs as its child: exec enters that child's
namespaces (nsenter), pause is the cgroup freezer, stop ends bwrap's process group and
the cgroup's removal anything left. `--die-with-parent` ties the sandbox to bwrap.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from virtbench.host import proc
from virtbench.runtimes.base import Availability, Family, Instance, which
from virtbench.runtimes.controls import Snapshot
from virtbench.runtimes.process.native import LeaderExec, Native


class BwrapSnapshot(Snapshot):
    why = "bubblewrap has no checkpoint/restore"


class Bwrap(Native):
    name = "bwrap"
    typical_launch_s = 0.01  # start + stop here without earlier boots
    family = Family.CONTAINER
    description = "bubblewrap sandbox on the artifact rootfs (pid, ipc, uts, net namespaces)"
    networks: ClassVar[tuple[str, ...]] = ("none", "host", "bridge")
    Exec = LeaderExec  # pause: the cgroup freezer (Runtime's)
    Snapshot = BwrapSnapshot

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        base = super().available(options)
        if not base.ok:
            return base
        if which("bwrap") is None:
            return Availability(False, reason="bwrap not on PATH", fix="apt-get install bubblewrap")
        res = proc.run(["bwrap", "--version"], check=False, timeout=10)
        if res.returncode != 0:
            return Availability(False, reason=f"bwrap --version failed: {res.stderr.strip()}")
        return Availability(True, version=res.stdout.strip().removeprefix("bubblewrap "))

    def conditions(self) -> dict[str, Any]:
        """Its storage and confinement, beside every figure: bwrap run as root keeps
        root's capabilities and installs no seccomp filter unless asked."""
        return {
            "rootfs": "dir (the artifact, read-only bind, shared)",
            "security": "namespaces only (root's capabilities)",
            "seccomp": "none",
            "lsm": "none",
        }

    def _launch_net(self, inst: Instance) -> list[str]:
        """On the bridge, vb-cgexec joins the instance's netns (bwrap cannot join one);
        `none` is bwrap's own --unshare-net."""
        if self.effective_network(inst.spec.network) == "bridge" and inst.netns is not None:
            return ["-n", str(inst.netns)]
        return []

    def _command(self, inst: Instance) -> list[str]:
        argv = [
            which("bwrap") or "bwrap",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--die-with-parent",
            "--hostname",
            inst.name,
            "--ro-bind",
            str(inst.spec.rootfs),
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--setenv",
            "VIRTBENCH_INSTANCE",
            inst.name,
        ]
        if self.effective_network(inst.spec.network) == "none":
            argv.append("--unshare-net")
        for host, dest in inst.binds:
            argv += ["--bind", str(host), dest]
        return [*argv, "--", *inst.argv]

    def leader(self, inst: Instance) -> int:
        """The workload: the first process under bwrap in a pid namespace of its own
        that is not bwrap's reaper."""
        return self.contained(inst, "sandboxed process", skip="bwrap")
