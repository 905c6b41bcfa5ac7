"""What a VM driver keeps of each instance (`inst.own`): its place on the run's bridge,
its disks, its port watch, and the snapshot it restores from; QEMU's and Firecracker's
add their own."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from virtbench.runtimes.process.native import ProcessState

if TYPE_CHECKING:
    from virtbench.measure.portready import PortWatch
    from virtbench.runtimes.vm.qmp import Qmp


@dataclass
class VmState(ProcessState):
    """One VM's: set while it is prepared, read when its VMM's command line is built."""

    tap: str | None = None  # its tap on the run's bridge (network "bridge")
    mac: str = ""
    gateway: str = ""  # the bridge's address, the guest's way out
    prefixlen: int | None = None
    data_disk: Path | None = None  # a Linux guest's /data disk (vb-init mounts vda)
    scratch_disk: Path | None = None  # an image's blank read-write disk
    disk_layer: Path | None = None  # its own copy-on-write layer over an image's disk
    port_watch: PortWatch | None = None  # an image ready when its port answers
    restore_from: Path | None = None  # while restored: the snapshot's directory


@dataclass
class QemuState(VmState):
    qmp: Qmp | None = None  # its QMP connection, opened when first needed


@dataclass
class FirecrackerState(VmState):
    # its configuration, made while prepared and sent over its API once it answers
    settings: dict[str, dict[str, Any]] | None = None
