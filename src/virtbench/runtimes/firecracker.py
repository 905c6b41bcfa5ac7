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
Pause and resume go through the API too (`PATCH /vm`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from pathlib import Path
from typing import Any

from virtbench.errors import InstanceError
from virtbench.host.unixhttp import SUN_PATH_MAX, UnixHTTPConnection
from virtbench.runtimes.base import Instance, which
from virtbench.runtimes.controls import CgroupFreezer
from virtbench.runtimes.vm import Vm, VmOptions

API_TIMEOUT_S = 10.0


class FirecrackerOptions(VmOptions):
    api: bool = True  # configure over the API socket (false: --no-api --config-file)


def api_put(
    conn: http.client.HTTPConnection, path: str, body: dict[str, Any], method: str = "PUT"
) -> None:
    """PUT (or `method`) `body` to `path`; raise InstanceError with Firecracker's fault
    message."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    conn.request(method, path, body=json.dumps(body), headers=headers)
    res = conn.getresponse()
    text = res.read().decode(errors="replace")
    if res.status >= 300:
        try:
            why = json.loads(text).get("fault_message", text)
        except ValueError:
            why = text
        raise InstanceError(f"firecracker: {method} {path} -> {res.status}: {why}")


class FirecrackerPause(CgroupFreezer):
    """Firecracker's own pause: PATCH /vm {"state": "Paused"} (then "Resumed") over its API
    socket, returning once it answered; with `api = false` (no socket) the cgroup freezer
    on the VMM, as for any VM."""

    rt: Firecracker

    def _pause(self, inst: Instance) -> None:
        if self.rt.opts.api:
            self._state(inst, "Paused")
        else:
            super()._pause(inst)

    def _resume(self, inst: Instance) -> None:
        if self.rt.opts.api:
            self._state(inst, "Resumed")
        else:
            super()._resume(inst)

    def _state(self, inst: Instance, state: str) -> None:
        conn = UnixHTTPConnection(self.rt.api_socket(inst), API_TIMEOUT_S)
        try:
            api_put(conn, "/vm", {"state": state}, method="PATCH")
        finally:
            conn.close()


class Firecracker(Vm):
    name = "firecracker"
    description = "Firecracker microVM (API socket): minimal guest, Linux guest or image"
    Options = FirecrackerOptions
    elf_only = True
    linux_exit = "reboot"
    linux_cmdline = "reboot=k pci=off"
    default_binary = "firecracker"
    Pause = FirecrackerPause
    get_it = ("download a release from github.com/firecracker-microvm/firecracker/releases "
              "or build it with cargo, and put `firecracker` on PATH")  # fmt: skip

    @property
    def opts(self) -> FirecrackerOptions:
        assert isinstance(self.options, FirecrackerOptions)
        return self.options

    def _socket(self, inst: Instance) -> Path:
        return self.ctx.scratch / f"{inst.name}.sock"

    def api_socket(self, inst: Instance) -> Path:
        """Its API socket (pause and snapshot go through it)."""
        return self._socket(inst)

    def _config(self, inst: Instance) -> Path:
        return self.ctx.scratch / f"{inst.name}.json"

    def _settings(self, inst: Instance) -> dict[str, dict[str, Any]]:
        machine = {"vcpu_count": self.opts.vcpus, "mem_size_mib": self.memory_mib(inst)}
        boot = {"kernel_image_path": str(self.kernel(inst)), "boot_args": self.cmdline(inst)}
        o = self.opts
        if (initrd := self.initrd(inst)) is not None:
            boot["initrd_path"] = str(initrd)
        settings: dict[str, dict[str, Any]] = {"machine-config": machine, "boot-source": boot}
        if inst.extra.get("tap"):
            settings["network-interfaces/eth0"] = {"iface_id": "eth0",
                                                   "host_dev_name": inst.extra["tap"],
                                                   "guest_mac": inst.extra["mac"]}  # fmt: skip
        if o.disk is not None:
            settings["drives/rootfs"] = {"drive_id": "rootfs", "path_on_host": str(o.disk),
                                         "is_root_device": True, "is_read_only": True}  # fmt: skip
        if inst.extra.get("data_disk"):  # a Linux guest's /data (vb-init: vda)
            settings["drives/data"] = {"drive_id": "data", "is_root_device": False,
                                       "path_on_host": inst.extra["data_disk"],
                                       "is_read_only": False}  # fmt: skip
        if inst.extra.get("scratch_disk"):  # an image's, after its disk
            settings["drives/scratch"] = {"drive_id": "scratch", "is_root_device": False,
                                          "path_on_host": inst.extra["scratch_disk"],
                                          "is_read_only": False}  # fmt: skip
        return settings

    def _prepare(self, inst: Instance) -> None:
        super()._prepare(inst)
        sock = self._socket(inst)
        if len(bytes(sock)) > SUN_PATH_MAX:
            raise InstanceError(f"firecracker: API socket path {sock} is longer than "
                                f"{SUN_PATH_MAX} bytes; set VIRTBENCH_STATE_DIR to a shorter "
                                "directory")  # fmt: skip
        sock.unlink(missing_ok=True)
        settings = self._settings(inst)  # untimed: the launch only sends them
        if self.opts.api:
            inst.extra["fc_settings"] = settings
        else:
            drives = [d for k in ("drives/data", "drives/rootfs", "drives/scratch")  # listed
                      if (d := settings.pop(k, None)) is not None]  # fmt: skip
            nic = settings.pop("network-interfaces/eth0", None)
            lists = {"drives": drives, "network-interfaces": [nic] if nic else []}
            self._config(inst).write_text(json.dumps({**settings, **lists}))

    def _command(self, inst: Instance) -> list[str]:
        binary = self.binary_of(self.opts)
        # its log in a file of its own: on stdout it would be read as the guest's console
        log = self.vmm_log(inst)
        argv = [which(binary) or binary, "--id", inst.name, "--level", "Warning",
                "--log-path", str(log)]  # fmt: skip
        if self.opts.api:
            return [*argv, "--api-sock", str(self._socket(inst))]
        return [*argv, "--no-api", "--config-file", str(self._config(inst))]

    def _configure(self, inst: Instance) -> None:
        if not self.opts.api:
            return
        assert inst.proc is not None
        sock = self._socket(inst)
        deadline = time.monotonic() + API_TIMEOUT_S
        conn = UnixHTTPConnection(sock, API_TIMEOUT_S)
        while True:  # the socket exists a few ms after exec
            try:
                conn.connect()
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if inst.proc.poll() is not None:
                    why = f"exited ({inst.proc.returncode}): {inst.log_tail()}"
                    raise InstanceError(f"firecracker {why}") from None
                if time.monotonic() > deadline:
                    why = f"no API socket at {sock} after {API_TIMEOUT_S:.0f} s"
                    raise InstanceError(f"firecracker: {why}") from None
                time.sleep(0.0005)
        try:
            for path, body in inst.extra["fc_settings"].items():
                api_put(conn, f"/{path}", body)
            api_put(conn, "/actions", {"action_type": "InstanceStart"})
        finally:
            conn.close()

    def _stop(self, inst: Instance) -> None:
        super()._stop(inst)
        with contextlib.suppress(OSError):
            self._socket(inst).unlink(missing_ok=True)
