"""`firecracker`: one Firecracker microVM per instance, configured over its API socket.

The binary is found on PATH (`binary` option; Firecracker is not in Debian: release
binaries are at https://github.com/firecracker-microvm/firecracker/releases, or build it
with cargo). Per instance: `firecracker --api-sock <state>/<name>.sock --id <name>` runs in
the instance's cgroups; the driver waits for the socket, then PUTs /machine-config
(vcpus, memory), /boot-source (the minimal guest kernel and its command line) and
/actions InstanceStart, as Firecracker's own getting-started guide does. All of that is
inside the timed launch: booting a Firecracker VM means doing it. `api = false` uses
`--no-api --config-file` instead (the same settings in a JSON file written untimed).

The minimal guest boots by PVH (Firecracker loads any ELF kernel with the
XEN_ELFNOTE_PHYS32_ENTRY note); its serial console is Firecracker's stdout; hello powers
off through the i8042 reset line, on which Firecracker exits with status 0. A Linux
guest gets the ELF vmlinux unpacked from its bzImage and ends with a reboot (reboot=k).
Pause and resume go through the API too (`PATCH /vm`), and snapshots: a full snapshot of
the paused VM (`PUT /snapshot/create`), restored by a new Firecracker (`PUT /snapshot/load`).
An instance commands will run in gets a vsock device (`PUT /vsock`) whose unix socket
reaches vb-agent in its Linux guest (runtimes/vm/agent.py).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

from virtbench.runtimes.base import Instance, which
from virtbench.runtimes.vm import api as vmm_api
from virtbench.runtimes.vm.agent import AGENT_PORT, GUEST_CID, HybridVsockAgent
from virtbench.runtimes.vm.api import ApiPause, ApiSnapshot, ApiVm, ApiVmOptions
from virtbench.runtimes.vm.state import FirecrackerState

WHO = "firecracker"


class FirecrackerOptions(ApiVmOptions):
    """Firecracker's: with `api = false` it is configured by a file (--no-api
    --config-file)."""


class FirecrackerPause(ApiPause):
    """PATCH /vm {"state": "Paused"} (then "Resumed")."""

    rt: Firecracker

    def state(self, inst: Instance, paused: bool) -> None:
        body = {"state": "Paused" if paused else "Resumed"}
        vmm_api.call_at(self.rt.api_socket(inst), "PATCH", "/vm", body, WHO)


class FirecrackerSnapshot(ApiSnapshot):
    """A full snapshot (PUT /snapshot/create: the VM's state and its memory, two files)
    of the paused VM; restored by a new Firecracker loading them (PUT /snapshot/load in
    `_configure`, resumed at once). The memory file is mapped privately, so many VMs
    restore from one snapshot."""

    def save(self, inst: Instance, sock: Path, image_dir: Path) -> None:
        vmm_api.call_at(sock, "PATCH", "/vm", {"state": "Paused"}, WHO)
        body = {
            "snapshot_type": "Full",
            "snapshot_path": str(image_dir / "vmstate"),
            "mem_file_path": str(image_dir / "memory"),
        }
        vmm_api.call_at(sock, "PUT", "/snapshot/create", body, WHO, timeout=300)


class Firecracker(ApiVm):
    name = "firecracker"
    typical_launch_s = 0.1  # start + stop here without earlier boots
    description = "Firecracker microVM (API socket): minimal guest, Linux guest or image"
    Options = FirecrackerOptions
    options: FirecrackerOptions
    State = FirecrackerState
    elf_only = True
    linux_exit = "reboot"
    linux_cmdline = "reboot=k pci=off"
    default_binary = "firecracker"
    Exec = HybridVsockAgent
    agent_channel = f"vsock:{AGENT_PORT}"
    Pause = FirecrackerPause
    Snapshot = FirecrackerSnapshot
    get_it = (
        "download a release from github.com/firecracker-microvm/firecracker/releases "
        "or build it with cargo, and put `firecracker` on PATH"
    )

    def _config(self, inst: Instance) -> Path:
        return self.ctx.scratch / f"{inst.name}.json"

    def _settings(self, inst: Instance) -> dict[str, dict[str, Any]]:
        o, guest = self.options, self.boot
        machine = {"vcpu_count": o.vcpus, "mem_size_mib": guest.memory_mib(inst)}
        boot = {"kernel_image_path": str(guest.kernel(inst)), "boot_args": guest.cmdline(inst)}
        if (initrd := guest.initrd(inst)) is not None:
            boot["initrd_path"] = str(initrd)
        settings: dict[str, dict[str, Any]] = {"machine-config": machine, "boot-source": boot}
        if inst.own.tap:
            settings["network-interfaces/eth0"] = {
                "iface_id": "eth0",
                "host_dev_name": inst.own.tap,
                "guest_mac": inst.own.mac,
            }
        if o.disk is not None:
            settings["drives/rootfs"] = {
                "drive_id": "rootfs",
                "path_on_host": str(o.disk),
                "is_root_device": True,
                "is_read_only": True,
            }
        if inst.own.data_disk is not None:  # a Linux guest's /data (vb-init: vda)
            settings["drives/data"] = {
                "drive_id": "data",
                "is_root_device": False,
                "path_on_host": str(inst.own.data_disk),
                "is_read_only": False,
            }
        if inst.spec.agent:  # vb-agent's channel: the hybrid vsock's unix socket
            settings["vsock"] = {"guest_cid": GUEST_CID, "uds_path": str(self.vsock_path(inst))}
        if inst.own.scratch_disk is not None:  # an image's, after its disk
            settings["drives/scratch"] = {
                "drive_id": "scratch",
                "is_root_device": False,
                "path_on_host": str(inst.own.scratch_disk),
                "is_read_only": False,
            }
        return settings

    def _prepare(self, inst: Instance) -> None:
        super()._prepare(inst)
        vmm_api.fresh_socket(self.api_socket(inst), WHO)
        settings = self._settings(inst)  # untimed: the launch only sends them
        if self.options.api:
            inst.own.settings = settings
        else:
            drives = [
                d
                for k in ("drives/data", "drives/rootfs", "drives/scratch")  # listed
                if (d := settings.pop(k, None)) is not None
            ]
            nic = settings.pop("network-interfaces/eth0", None)
            lists = {"drives": drives, "network-interfaces": [nic] if nic else []}
            self._config(inst).write_text(json.dumps({**settings, **lists}))

    def _command(self, inst: Instance) -> list[str]:
        binary = self.binary_of(self.options)
        # its log in a file of its own: on stdout it would be read as the guest's console
        log = self.vmm_log(inst)
        argv = [
            which(binary) or binary,
            "--id",
            inst.name,
            "--level",
            "Warning",
            "--log-path",
            str(log),
        ]
        if self.options.api:
            return [*argv, "--api-sock", str(self.api_socket(inst))]
        return [*argv, "--no-api", "--config-file", str(self._config(inst))]

    def _configure(self, inst: Instance) -> None:
        """Its settings and InstanceStart over the API socket, or a snapshot loaded."""
        if not self.options.api:
            return
        conn = vmm_api.connect_to(inst, self.api_socket(inst), WHO)
        try:
            if (image := inst.own.restore_from) is not None:
                body = {
                    "snapshot_path": str(image / "vmstate"),
                    "resume_vm": True,
                    "mem_backend": {"backend_type": "File", "backend_path": str(image / "memory")},
                }
                vmm_api.call(conn, "PUT", "/snapshot/load", body, WHO)
                return
            for path, body in (inst.own.settings or {}).items():
                vmm_api.call(conn, "PUT", f"/{path}", body, WHO)
            vmm_api.call(conn, "PUT", "/actions", {"action_type": "InstanceStart"}, WHO)
        finally:
            conn.close()

    def _stop(self, inst: Instance) -> None:
        super()._stop(inst)
        with contextlib.suppress(OSError):
            self.api_socket(inst).unlink(missing_ok=True)
            self.vsock_path(inst).unlink(missing_ok=True)
