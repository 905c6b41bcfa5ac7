"""What an instance is given before its launch, untimed: a place on the run's bridge (a
network namespace with a veth, or a VM's tap), a data directory on disk, and the ready
probe's address it can reach. A helper object a driver declares by class (`Attach =
VmAttach`) and Runtime makes one per driver (`rt.attach`, holding the driver as `rt`);
drivers subclass `bridge`, `data` and `probe` where theirs differ (VMs, native)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from virtbench.errors import InstanceError, VirtbenchError
from virtbench.runtimes.model import (
    DATA_MOUNT,
    PROBE_MOUNT,
    PROBE_PLACEHOLDER,
    Family,
    Instance,
    remove_tree,
    with_probe,
)

if TYPE_CHECKING:
    from virtbench.runtimes.network import BridgeNetwork


class Attach:
    """Bridge, data directory and probe address of an instance of a driver (`rt`, which
    gives `ctx`, `family` and `virtbench_bridge`)."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt

    def prepare(self, inst: Instance, network: str) -> None:
        """Everything `inst` is given before its launch on `network`: the probe's address
        in its argv, its place on the run's bridge, its data directory."""
        inst.argv = self.probe(inst, network)
        if network == "bridge" and self.rt.virtbench_bridge:
            self.bridge(inst)
        if inst.spec.data:
            self.data(inst)

    def release(self, inst: Instance) -> None:
        """After `inst` stopped: its place on the bridge and its data directory go (the
        run's data directory too, once empty)."""
        bridge = self.rt.ctx.bridge
        if bridge is not None:
            bridge.detach(inst.name)
        if inst.data_dir is not None:
            remove_tree(inst.data_dir)
            with contextlib.suppress(OSError):  # the run's directory, once empty
                inst.data_dir.parent.rmdir()

    def bridge(self, inst: Instance) -> None:
        """Put the instance on the run's bridge: a netns with a veth (VMs: a tap)."""
        inst.netns, inst.address = self.network().attach(inst.name)
        if inst.spec.sysctls:  # the profile's namespaced keys, in the namespace made here
            from virtbench.host import sysctl

            try:
                sysctl.in_netns(inst.netns, dict(inst.spec.sysctls))
            except VirtbenchError as exc:  # this instance fails; the run goes on
                raise InstanceError(
                    f"{inst.name}: sysctl profile in its namespace: {exc}"
                ) from None

    def data(self, inst: Instance) -> None:
        """The instance's data directory: `<data>/<run-id>/<name>` on the host's disk,
        bind-mounted at DATA_MOUNT, removed with the instance. World-writable so that an
        unprivileged container's root (LXD maps it to another host uid) can write it;
        its parents are root's; the run's directory goes with its last instance."""
        ctx = self.rt.ctx
        run_dir = ctx.paths.data_dir(ctx.run_id)
        d = run_dir / inst.name
        ctx.state.record("data", str(d))
        run_dir.mkdir(parents=True, exist_ok=True)
        run_dir.chmod(0o755)
        d.mkdir()
        d.chmod(0o777)
        inst.data_dir = d
        inst.binds.append((d, DATA_MOUNT))

    def network(self) -> BridgeNetwork:
        """The run's bridge, made on first use; the probe listens on it."""
        ctx = self.rt.ctx
        if ctx.bridge is None:
            from virtbench.runtimes.network import BridgeNetwork

            ctx.bridge = BridgeNetwork(ctx.run_id, ctx.state)
        ctx.bridge.ensure()
        if ctx.probe is not None:
            ctx.probe.add_udp(ctx.bridge.host_ip)
        return ctx.bridge

    def probe(self, inst: Instance, network: str) -> tuple[str, ...]:
        """The instance's argv with PROBE_PLACEHOLDER replaced by an address reachable
        from it."""
        argv = inst.spec.argv
        if PROBE_PLACEHOLDER not in argv:
            return argv
        probe = self.rt.ctx.probe
        if probe is None:
            raise InstanceError("workload needs the ready probe but none is listening")
        if network == "bridge" and self.rt.virtbench_bridge:
            addr = f"udp:{self.network().host_ip}:{probe.port}"
        elif network == "host" or self.rt.family is Family.PROCESS:
            addr = f"udp:127.0.0.1:{probe.port}"
        else:
            inst.binds.append((probe.unix_dir, PROBE_MOUNT))
            addr = f"unix:{PROBE_MOUNT}/{probe.unix_name}"
        return with_probe(argv, addr)
