"""A VM's place on the run's bridge (a tap, and a DHCP lease for images that take their
address so), its data disk (a Linux guest's), and its probe without a network (its
console). The Vm base (vm/base.py) attaches its instances with it."""

from __future__ import annotations

from virtbench.errors import InstanceError, VirtbenchError
from virtbench.host import proc
from virtbench.runtimes.model import Instance, with_probe
from virtbench.runtimes.process.native import NativeAttach
from virtbench.runtimes.vm.boot import Booted
from virtbench.runtimes.vm.guest import mac_of


class VmAttach(NativeAttach):
    """A VM's place on the bridge is a tap, its data a disk image, and without a network
    its probe is its console."""

    rt: Booted  # the Vm driver (vm/base.py), as far as what it boots goes

    def data(self, inst: Instance) -> None:
        """A Linux guest's data disk: a sparse ext4 image (`data_disk_mib`) in the
        instance's data directory (so it goes with it), attached as its first virtio disk
        and mounted at /data by vb-init (`vb.data=vda`)."""
        super().data(inst)
        assert inst.data_dir is not None
        if self.rt.boot.guest(inst) != "linux":
            return  # the minimal guest and images have no use for one
        disk = inst.data_dir / "disk.img"
        try:
            with open(disk, "wb") as f:
                f.truncate(self.rt.options.data_disk_mib << 20)
            lazy = "lazy_itable_init=1,lazy_journal_init=1"
            proc.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", lazy, str(disk)], timeout=120)
        except (OSError, VirtbenchError) as exc:  # this instance fails; the run goes on
            raise InstanceError(f"{inst.name}: its data disk {disk}: {exc}") from None
        inst.own.data_disk = disk

    def bridge(self, inst: Instance) -> None:
        bridge = self.network()
        tap, ip = bridge.attach_tap(inst.name, mac_of)
        inst.address = ip
        own = inst.own
        own.tap, own.mac, own.gateway = tap, mac_of(ip), bridge.host_ip
        own.prefixlen = bridge.prefixlen
        if self.rt.boot.byo and self.rt.options.wants_dhcp:  # its address as a lease of its MAC
            bridge.lease(inst.name, own.mac, ip, self.rt.ctx.daemons)

    def probe(self, inst: Instance, network: str) -> tuple[str, ...]:
        if network == "none":  # no way out of the VM but its console
            return with_probe(inst.spec.argv, "file:/dev/console")
        return super().probe(inst, network)
