"""`cloud-hypervisor`: one Cloud Hypervisor VM per instance, configured by its command line.

The binary is found on PATH (`binary` option; Cloud Hypervisor is not in Debian: static
release binaries are at https://github.com/cloud-hypervisor/cloud-hypervisor/releases, or
build it with cargo). Per instance: `cloud-hypervisor --kernel <minimal guest> --cmdline
... --cpus boot=N --memory size=<M>M --serial tty --console off` in the instance's
cgroups, so the VM boots as soon as the process starts and the serial port (COM1, which
the minimal guest writes) is the process's stdout. The minimal guest boots by PVH; hello
powers off through the ACPI shutdown port (0x600), on which Cloud Hypervisor exits 0; a
Linux guest (its bzImage unpacked to an ELF vmlinux) powers off through ACPI too.

With its API socket (`--api-socket`, `api = true`, the default) it pauses and resumes
through its API (`vm.pause`, `vm.resume`) and snapshots: the paused VM's state and memory
written to a directory (`vm.snapshot`), restored by a new Cloud Hypervisor started with
`--restore` and resumed (`vm.resume`). An instance commands will run in gets a vsock
device (`--vsock`) whose unix socket reaches vb-agent in its Linux guest
(runtimes/vm/agent.py).
"""

from __future__ import annotations

from pathlib import Path

from virtbench.runtimes.base import Instance, which
from virtbench.runtimes.vm import api as vmm_api
from virtbench.runtimes.vm.agent import AGENT_PORT, GUEST_CID, HybridVsockAgent
from virtbench.runtimes.vm.api import ApiPause, ApiSnapshot, ApiVm, ApiVmOptions

WHO = "cloud-hypervisor"


class CloudHypervisorOptions(ApiVmOptions):
    """Cloud Hypervisor's: with `api = false` it runs without --api-socket (no pause or
    snapshot but the freezer)."""


class CloudHypervisorPause(ApiPause):
    """PUT /api/v1/vm.pause (then vm.resume)."""

    rt: CloudHypervisor

    def state(self, inst: Instance, paused: bool) -> None:
        path = "/api/v1/vm.pause" if paused else "/api/v1/vm.resume"
        vmm_api.call_at(self.rt.api_socket(inst), "PUT", path, None, WHO)


class CloudHypervisorSnapshot(ApiSnapshot):
    """vm.pause, then vm.snapshot to `file://<image_dir>` (its config, state and memory);
    restored by a new Cloud Hypervisor started with `--restore source_url=file://<dir>`,
    then vm.resume in `_configure` (a restored VM starts paused)."""

    def problem(self) -> str | None:
        if (why := super().problem()) is not None:
            return why
        from virtbench.host.facts import kvm_kind

        if kvm_kind() == "pvm":  # seen with Cloud Hypervisor 53 on such a host
            return (
                "its vCPUs' state cannot be saved under this host's nested PVM KVM "
                "(KVM_GET_NESTED_STATE fails: invalid argument)"
            )
        return None

    def save(self, inst: Instance, sock: Path, image_dir: Path) -> None:
        vmm_api.call_at(sock, "PUT", "/api/v1/vm.pause", None, WHO)
        body = {"destination_url": f"file://{image_dir}"}
        vmm_api.call_at(sock, "PUT", "/api/v1/vm.snapshot", body, WHO, timeout=300)


class CloudHypervisor(ApiVm):
    name = "cloud-hypervisor"
    typical_launch_s = 0.1  # start + stop here without earlier boots
    description = "Cloud Hypervisor VM: minimal guest, Linux guest or image"
    Options = CloudHypervisorOptions
    options: CloudHypervisorOptions
    Exec = HybridVsockAgent
    agent_channel = f"vsock:{AGENT_PORT}"
    Pause = CloudHypervisorPause
    Snapshot = CloudHypervisorSnapshot
    elf_only = True
    default_binary = "cloud-hypervisor"
    get_it = (
        "download a static release from github.com/cloud-hypervisor/cloud-hypervisor/"
        "releases or build it with cargo, and put `cloud-hypervisor` on PATH"
    )

    def _prepare(self, inst: Instance) -> None:
        super()._prepare(inst)
        if self.options.api:
            vmm_api.fresh_socket(self.api_socket(inst), WHO)

    def _api(self, inst: Instance) -> list[str]:
        return ["--api-socket", f"path={self.api_socket(inst)}"] if self.options.api else []

    def _command(self, inst: Instance) -> list[str]:
        binary = which(self.binary_of(self.options)) or self.binary_of(self.options)
        if (image := inst.own.restore_from) is not None:
            return [binary, *self._api(inst), "--restore", f"source_url=file://{image}"]
        return [binary, *self._api(inst), *self._boot(inst)]

    def _configure(self, inst: Instance) -> None:
        """A restored VM starts paused: resumed once its API answers."""
        if inst.own.restore_from is None:
            return
        conn = vmm_api.connect_to(inst, self.api_socket(inst), WHO)
        try:
            vmm_api.call(conn, "PUT", "/api/v1/vm.resume", None, WHO)
        finally:
            conn.close()

    def _stop(self, inst: Instance) -> None:
        super()._stop(inst)
        self.api_socket(inst).unlink(missing_ok=True)
        self.vsock_path(inst).unlink(missing_ok=True)

    def _boot(self, inst: Instance) -> list[str]:
        o, boot = self.options, self.boot
        initrd = boot.initrd(inst)
        extra = ["--initramfs", str(initrd)] if initrd is not None else []
        own = inst.own
        disks = [f"path={own.data_disk}"] if own.data_disk is not None else []
        if o.disk is not None:
            disks.append(f"path={o.disk},readonly=on")
        if own.scratch_disk is not None:  # an image's, after its disk
            disks.append(f"path={own.scratch_disk}")
        if disks:  # a Linux guest's /data first (vb-init: vda)
            extra += ["--disk", *disks]
        if own.tap:
            extra += ["--net", f"tap={own.tap},mac={own.mac}"]
        if inst.spec.agent:  # vb-agent's channel: the hybrid vsock's unix socket
            extra += ["--vsock", f"cid={GUEST_CID},socket={self.vsock_path(inst)}"]
        return [
            "--kernel",
            str(boot.kernel(inst)),
            "--cmdline",
            boot.cmdline(inst),
            "--cpus",
            f"boot={o.vcpus}",
            "--memory",
            f"size={boot.memory_mib(inst)}M",
            "--serial",
            "tty",
            "--console",
            "off",
            *extra,
        ]
