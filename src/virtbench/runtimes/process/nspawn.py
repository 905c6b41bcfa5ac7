"""`nspawn`: systemd-nspawn on the artifact rootfs, read-only, no machine registration.

PID 1 here is not systemd, so nspawn runs with `--register=no --keep-unit`: it neither
asks machined for a scope nor makes its own cgroup. virtbench therefore starts it the way
it starts `native` processes -- through vb-cgexec inside the instance's own cgroups (with
the memory limit and cpuset) -- so nspawn and the container's processes are all counted.
nspawn stays in the foreground for the container's life; a detached instance is that
process running. Networks: `none` (--private-network), `host`, `bridge` (the virtbench
bridge's per-instance netns via --network-namespace-path).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from virtbench.host import proc
from virtbench.runtimes.base import Availability, Family, Instance, which
from virtbench.runtimes.controls import Snapshot
from virtbench.runtimes.process.native import LeaderExec, Native


class NspawnSnapshot(Snapshot):
    why = "systemd-nspawn has no checkpoint/restore"


class Nspawn(Native):
    name = "nspawn"
    typical_launch_s = 0.15  # start + stop here without earlier boots
    family = Family.CONTAINER
    description = "systemd-nspawn container on the artifact rootfs"
    networks: ClassVar[tuple[str, ...]] = ("none", "host", "bridge")
    Exec = LeaderExec  # pause: the cgroup freezer (Runtime's)
    Snapshot = NspawnSnapshot
    # TERM lets nspawn end the container and undo its mounts and its propagation
    # directory under /run/systemd/nspawn; the group's TERM and KILL only if it lingers
    leader_grace = 5.0

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        base = super().available(options)
        if not base.ok:
            return base
        if which("systemd-nspawn") is None:
            return Availability(
                False,
                reason="systemd-nspawn not on PATH",
                fix="apt-get install systemd-container",
            )
        res = proc.run(["systemd-nspawn", "--version"], check=False, timeout=10)
        first = (res.stdout.strip().splitlines() or ["?"])[0]
        return Availability(True, version=first.split("(")[0].replace("systemd", "").strip())

    def _command(self, inst: Instance) -> list[str]:
        network = self.effective_network(inst.spec.network)
        argv = [
            which("systemd-nspawn") or "systemd-nspawn",
            "--quiet",
            "--register=no",
            "--keep-unit",
            "--directory",
            str(inst.spec.rootfs),
            "--read-only",
            "--machine",
            inst.name,
            "--timezone=off",
            "--resolv-conf=off",
            "--link-journal=no",
            f"--setenv=VIRTBENCH_INSTANCE={inst.name}",
        ]
        if network == "none":
            argv.append("--private-network")
        elif network == "bridge":
            argv.append(f"--network-namespace-path={inst.netns}")
        argv += [f"--bind={host}:{dest}" for host, dest in inst.binds]
        return [*argv, "--", *inst.argv]

    def leader(self, inst: Instance) -> int:
        """The container's PID 1: the first process under systemd-nspawn in a PID
        namespace of its own."""
        return self.contained(inst, "container process")
