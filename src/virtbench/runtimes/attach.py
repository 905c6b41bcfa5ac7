"""What an instance is given before its launch, untimed: a place on the run's bridge (a
network namespace with a veth, or a VM's tap), a data directory on disk, and the ready
probe's address it can reach. A mixin of the Runtime base class; drivers override
`_attach_bridge`, `_attach_data` and `_resolve_probe` where theirs differ (VMs, native)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from virtbench.errors import InstanceError, VirtbenchError
from virtbench.runtimes.model import DATA_MOUNT, PROBE_MOUNT, PROBE_PLACEHOLDER, Family, Instance

if TYPE_CHECKING:
    from virtbench.runtimes.model import RuntimeContext
    from virtbench.runtimes.network import BridgeNetwork


class Attach:
    """Bridge, data directory and probe address of an instance (mixed into Runtime)."""

    ctx: RuntimeContext
    family: Family
    virtbench_bridge: bool

    def _attach_bridge(self, inst: Instance) -> None:
        """Put the instance on the run's bridge: a netns with a veth (VMs: a tap)."""
        inst.netns, inst.address = self._bridge().attach(inst.name)
        if inst.spec.sysctls:  # the profile's namespaced keys, in the namespace made here
            from virtbench.host import sysctl

            try:
                sysctl.in_netns(inst.netns, dict(inst.spec.sysctls))
            except VirtbenchError as exc:  # this instance fails; the run goes on
                raise InstanceError(
                    f"{inst.name}: sysctl profile in its namespace: {exc}"
                ) from None

    def _attach_data(self, inst: Instance) -> None:
        """The instance's data directory: `<data>/<run-id>/<name>` on the host's disk,
        bind-mounted at DATA_MOUNT, removed with the instance. World-writable so that an
        unprivileged container's root (LXD maps it to another host uid) can write it;
        its parents are root's; the run's directory goes with its last instance."""
        run_dir = self.ctx.paths.data_dir(self.ctx.run_id)
        d = run_dir / inst.name
        self.ctx.state.record("data", str(d))
        run_dir.mkdir(parents=True, exist_ok=True)
        run_dir.chmod(0o755)
        d.mkdir()
        d.chmod(0o777)
        inst.data_dir = d
        inst.binds.append((d, DATA_MOUNT))

    def _bridge(self) -> BridgeNetwork:
        if self.ctx.bridge is None:
            from virtbench.runtimes.network import BridgeNetwork

            self.ctx.bridge = BridgeNetwork(self.ctx.run_id, self.ctx.state)
        self.ctx.bridge.ensure()
        if self.ctx.probe is not None:
            self.ctx.probe.add_udp(self.ctx.bridge.host_ip)
        return self.ctx.bridge

    def _resolve_probe(self, inst: Instance, network: str) -> tuple[str, ...]:
        """Replace PROBE_PLACEHOLDER by an address reachable from this instance."""
        argv = inst.spec.argv
        if PROBE_PLACEHOLDER not in argv:
            return argv
        probe = self.ctx.probe
        if probe is None:
            raise InstanceError("workload needs the ready probe but none is listening")
        if network == "bridge" and self.virtbench_bridge:
            addr = f"udp:{self._bridge().host_ip}:{probe.port}"
        elif network == "host" or self.family is Family.PROCESS:
            addr = f"udp:127.0.0.1:{probe.port}"
        else:
            inst.binds.append((probe.unix_dir, PROBE_MOUNT))
            addr = f"unix:{PROBE_MOUNT}/{probe.unix_name}"
        return tuple(addr if a == PROBE_PLACEHOLDER else a for a in argv)
