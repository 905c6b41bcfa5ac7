"""What every VM-class driver shares: a VMM process per instance booting a guest kernel.

A VM has a VMM: `Vm` is a Runtime that holds its instances' VMM processes (`self.vmm`,
vm/vmm.py's `Vmm`) and what they boot (`self.boot`, vm/boot.py's `VmBoot`). A driver
(qemu, firecracker, cloud-hypervisor, the Solo5 tenders) fills in a few hooks: how to
start its VMM (`_command`, and optionally `_configure` for VMMs set up over an API socket
after they start) and what its exit status means (class attributes); this base does the
rest the same way for all of them:

- the VMM runs in the instance's cgroups (launched through vb-cgexec, as native launches a
  process), so its memory, threads and leftovers are accounted and cleaned like any
  instance's;
- its serial console (the VMM's stdout) is read by a thread that stamps the first byte
  (`inst.console.t_first_output_ns`) and the guest's markers: `VB-READY <name>` is handed
  to the probe listener as if it were the ready datagram, `VB-HELLO <name>` says the hello
  workload ran (the exit status is then reported as the guest's 0);
- the guest (option `guest`, default `auto`: the minimal guest for hello, sleep and beat, Linux
  for every other workload):
  - `minimal`: the artifact's minimal kernel (`/boot/vb-minikernel`, guest/minikernel/):
    `vb.mode=hello` prints its marker and powers off, `vb.mode=sleep` prints `VB-READY`
    and halts, `vb.mode=beat` then prints a heartbeat (`VB-BEAT`) about every 2 ms;
  - `linux`: a Linux kernel (Debian's linux-image-cloud-amd64 unless `kernel` is given)
    with an initramfs of the run's artifact rootfs whose /init is vb-init
    (artifacts/linux.py, guest/vb-init.c): the workload's argv, the instance name and the
    NIC's address go on the kernel command line; vb-init prints `VB-EXIT <name> <status>`
    when the workload ends and powers off. The ready probe goes over the bridge (UDP to the
    host) or, without a network, as a `VB-READY` line on the console. Linux cannot boot
    under a nested PVM KVM (`virtbench doctor` says which): use TCG there;
- memory: the VMM's PSS, and without the guest's RAM mapping (`VmMemory.guest_ram_pss`).

What the guest boots (its kernel, initrd, memory and command line) is vm/boot.py's.

Bring your own image (`guest = "image"`, usually a named runtime of the spec's,
`[runtime.uk-nginx] driver = "qemu"`): a kernel built elsewhere (Unikraft, OSv, IncludeOS,
MirageOS, a Linux of your own) with optional `initrd` and `disk` (attached read-only as
the first virtio disk), its `cmdline` (after its `preset`'s, runtimes/vm/presets.py: how it
learns its address; `{name}`, `{ip}`, `{prefixlen}`, `{netmask}`, `{gateway}` and
`{port}` are filled in) and how to tell it is up: a `ready` regular expression matched
against its serial console, or, for an image that `serves`, its port answering
(measure/portready.py). Such an image runs as
- `hello` (spawn -> the VMM exits after the guest powers off; a boot only if the guest
  printed something and no crash line: `Vm.image_exit`; or, for a guest whose VMM
  stays up after it halts (Rumprun), spawn -> its console's halt line, its status the
  one its console said: its preset's `exited` and `halted`, vm/image.py `halted_exit`);
- `sleep` and the pile-ups' idle instances (spawn -> ready), timed like the minimal guest;
- the workloads it serves (`serves = "http"`: nginx and http-fixed; "redis"; "memcached";
  "udp-echo"; "ping": latency's icmp test): always on a tap of the run's bridge, driven
  by the same host-side clients, parsers and metrics as those workloads in any other
  runtime, on its `port`.
The files' size is the image size. `scratch_disk_mib` gives each instance a blank
read-write disk after `disk`, removed with it.

The console is the guest's alone: the VMM's own messages (its stderr, Firecracker's log)
go to `<instance>.vmm.log` beside the console log, so first output is the guest's first
byte and a failure says both.
"""

from __future__ import annotations

import os
import re
import shutil
from abc import abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from virtbench.errors import InstanceError
from virtbench.host import proc
from virtbench.measure import memory
from virtbench.runtimes import controls
from virtbench.runtimes.base import (
    Availability,
    Family,
    Instance,
    Runtime,
    RuntimeContext,
    which,
)
from virtbench.runtimes.controls import Exec
from virtbench.runtimes.model import crash_line
from virtbench.runtimes.observe import Memory, Serves
from virtbench.runtimes.process.native import HostProcess, NativeSnapshot
from virtbench.runtimes.vm import image as vm_image
from virtbench.runtimes.vm.attach import VmAttach
from virtbench.runtimes.vm.boot import VmBoot
from virtbench.runtimes.vm.guest import (
    KERNEL,
    SIMPLE,
    VmOptions,
    guest_mode,
    image_cannot_run,
    mac_of,
)
from virtbench.runtimes.vm.state import VmState
from virtbench.runtimes.vm.vmm import Vmm

if TYPE_CHECKING:
    from virtbench.workloads import ImageService

__all__ = ["KERNEL", "SIMPLE", "Vm", "VmOptions", "guest_mode", "mac_of"]


def _needs_data(workload: str) -> bool:
    """Whether `workload`'s instances (a workload's, or an isolation attacker's) need a
    data disk."""
    from virtbench import workloads
    from virtbench.workloads import attackers

    attacker = attackers.of_workload(workload)
    if attacker is not None:
        return attacker.data
    return workloads.get(workload).needs.data


class NoGuestAgent(Exec):
    why = (
        "its guest has no exec agent: the minimal guest has no processes, and "
        "vb-init, the Linux guest's init, runs one workload"
    )


class VmMemory(Memory):
    """As any instance's, and of it the guest's RAM: the VMM's guest memory mapping."""

    rt: Vm

    def guest_ram_pss(self, inst: Instance) -> int | None:
        size_kib = self.rt.boot.memory_mib(inst) * 1024
        found = [memory.pss_of_mappings(pid, size_kib) for pid in self.rt.observe.pids(inst)]
        values = [v for v in found if v is not None]
        return sum(values) if values else None


class ImageServes(Serves):
    """An image built elsewhere serves what its `serves` says, on its `port`; the minimal
    and Linux guests serve the workload's own server."""

    rt: Vm

    def port(self, workload: str) -> int | None:
        """The port an image serving `workload` listens on (None: the workload's own)."""
        return self.rt.options.serve_port if self.service(workload) is not None else None

    def service(self, workload: str) -> ImageService | None:
        """What the image serves `workload` as, if it serves it."""
        o = self.rt.options
        if self.rt.boot.byo and o.service is not None and workload in o.service.workloads:
            return o.service
        return None


class Vm(Runtime):
    """Base of the VM drivers (not a runtime of its own): each of its instances a VMM
    process (`vmm`) booting a guest (`boot`)."""

    family = Family.VM
    spawns_launcher = True  # a spawn that returns at once, as native's
    # bridge: a tap device on the run's bridge, the VM's first NIC (virtio-net)
    networks: ClassVar[tuple[str, ...]] = ("none", "bridge")
    Options: ClassVar[type[VmOptions]] = VmOptions
    options: VmOptions
    State = VmState
    default_binary: ClassVar[str] = ""
    get_it: ClassVar[str] = ""  # where to get the binary, for `doctor`
    # the exit status of a VMM whose guest powered off normally
    clean_exit: ClassVar[int] = 0
    # how a Linux guest's vb-init ends the VM (vb.exit=): QEMU's isa-debug-exit device
    # (carries the status), a reboot (with reboot=k: Firecracker has no power-off) or ACPI
    # power-off; and what the guest's command line needs for it
    linux_exit: ClassVar[str] = "poweroff"
    linux_cmdline: ClassVar[str] = ""
    # where vb-init starts a Linux guest's exec agent (vb.agent=): "" finds QEMU's
    # virtio-serial port by its name; "vsock:<port>" on a VMM's hybrid vsock
    agent_channel: ClassVar[str] = ""
    # loads only ELF kernels: a Linux guest's (or an image's) bzImage is unpacked first
    elf_only: ClassVar[bool] = False
    # boots an image's disk by itself (through a firmware), given no kernel
    boots_disks: ClassVar[bool] = False
    # no exec (the drivers' own: vm/agent.py); pause is the freezer on the VMM (QEMU's is
    # QMP, Firecracker's and Cloud Hypervisor's their APIs); no snapshot but the drivers' own
    Exec: ClassVar[type[controls.Exec]] = NoGuestAgent
    # as its VMM's process: no checkpoint virtbench drives
    Snapshot: ClassVar[type[controls.Snapshot]] = NativeSnapshot
    Memory = VmMemory
    Attach = VmAttach
    Serves = ImageServes

    def __init__(self, ctx: RuntimeContext, *args: Any, **kwargs: Any) -> None:
        super().__init__(ctx, *args, **kwargs)
        self.vmm = Vmm(ctx, self.label)
        self.boot = VmBoot(self)

    # --- what a VM driver fills in ------------------------------------------------------
    @abstractmethod
    def _command(self, inst: Instance) -> list[str]:
        """The VMM's argv for `inst` (its binary first; what it restores from, if
        `inst.own.restore_from` is set)."""

    def _configure(self, inst: Instance) -> None:
        """Timed, right after the VMM started: configure and boot it over its API."""
        del inst  # VMMs configured by their command line have nothing to do here

    @classmethod
    def binary_of(cls, options: VmOptions | None) -> str:
        return (options.binary if options is not None else "") or cls.default_binary

    @classmethod
    def needs_kvm(cls, options: VmOptions | None) -> bool:
        del options
        return True

    @classmethod
    def version_of(cls, path: str) -> str:
        out = proc.run([path, "--version"], timeout=10).stdout
        m = re.search(r"(\d+\.\d+(?:\.\d+)?\S*)", out)
        return m.group(1) if m else "?"

    @classmethod
    def available(cls, options: VmOptions | None = None) -> Availability:
        binary = cls.binary_of(options)
        path = which(binary)
        if path is None:
            return Availability(False, reason=f"{binary} not on PATH", fix=cls.get_it)
        if cls.needs_kvm(options) and not os.access("/dev/kvm", os.R_OK | os.W_OK):
            fix = "load kvm_intel or kvm_amd (in a VM: enable nested virtualization)"
            return Availability(False, reason="/dev/kvm missing or not accessible", fix=fix)
        base = HostProcess.available()
        if not base.ok:
            return base
        try:
            return Availability(True, version=cls.version_of(path))
        except Exception as exc:
            return Availability(False, reason=f"{binary} --version failed: {exc}")

    @classmethod
    def cannot_run(cls, workload: str, options: VmOptions | None = None) -> str | None:
        opts = options or cls.Options()
        simple = workload in SIMPLE
        if opts.guest == "minimal" and not simple:
            return (
                'its minimal guest runs only hello, sleep and beat (guest = "auto" or "linux" '
                "boots Linux for other workloads)"
            )
        if opts.guest == "image":
            if opts.boots_disk and not cls.boots_disks:
                return (
                    f"{cls.name} boots a kernel, not a disk by itself: give kernel = "
                    "(an image that boots from its own disk needs qemu:q35's firmware)"
                )
            return image_cannot_run(workload, opts)
        if opts.guest == "linux" or not simple:
            from virtbench.host.facts import kvm_kind

            if cls.needs_kvm(opts) and kvm_kind() == "pvm":
                return (
                    "a Linux guest cannot boot under this host's nested PVM KVM (only "
                    "the minimal guest can): use emulation, e.g. qemu:q35:tcg"
                )
            if _needs_data(workload) and shutil.which("mkfs.ext4") is None:
                return "its data disk needs mkfs.ext4 on the host (apt-get install e2fsprogs)"
        return None

    def effective_network(self, requested: str) -> str:
        """An image that serves is on the run's bridge whatever the spec says: its
        clients reach it there."""
        if self.boot.byo and self.options.serves is not None:
            return "bridge"
        return super().effective_network(requested)

    def _prepare(self, inst: Instance) -> None:
        mode = guest_mode(inst.spec.argv)
        byo, kernel = self.boot.byo, self.boot.kernel
        if mode is None and self.boot.guest(inst) == "minimal":
            raise InstanceError(
                f"{self.label}: the minimal guest runs only the hello, sleep and beat "
                f'workloads (got {" ".join(inst.spec.argv)}); use guest = "linux"'
            )
        o = self.options
        if byo and mode != "hello" and o.ready is None and o.serves is None:
            raise InstanceError(
                f"{self.label}: an image that keeps running needs ready = "
                '"<regex on its console>", or serves = "http" (ready when '
                "its port answers)"
            )
        if byo and o.scratch_disk_mib is not None:
            vm_image.scratch_disk(inst, o, self.ctx.scratch)
        if not o.boots_disk and not kernel(inst).is_file():
            raise InstanceError(f"{self.label}: no guest kernel at {kernel(inst)} (run make setup)")
        self.vmm.prepare(inst)

    def vmm_log(self, inst: Instance) -> Path:
        """Where the VMM's own messages go (never the guest's console log)."""
        return inst.log_path.with_name(f"{inst.name}.vmm.log")

    def launch_argv(self, inst: Instance) -> list[str]:
        """What `_start` spawns for a prepared instance: vb-cgexec into its cgroups, then
        the VMM (also what a user would type: bench/byhand.py)."""
        return self.vmm.argv(inst, self._command(inst))

    def _start(self, inst: Instance, detach: bool) -> None:
        del detach  # both ways the VM runs on; run_to_exit waits for the VMM to end
        self.vmm.spawn(inst, self.launch_argv(inst), self.vmm_log(inst))
        self.read_console(inst)
        self._configure(inst)
        if self.boot.byo:  # ready when its port answers, if it serves and prints nothing we read
            vm_image.watch_port(inst, self.options, lambda t: self.vmm.ready(inst, t))

    def read_console(self, inst: Instance) -> None:
        """Read the console of `inst`'s VMM (just spawned) from now on: `VB-READY`, or an
        image's `ready` expression, and how its preset says it is done."""
        end = vm_image.guest_end(self.options) if self.boot.byo else None
        self.vmm.read(inst, self.options.ready, end, self._halted)

    def _halted(self, inst: Instance, t: int) -> None:
        """The image said it halted (its preset's `halted` line) and its VMM stays up,
        idle (QEMU under Rumprun): end it, TERM then KILL, by the process this driver
        started (in the console reader's thread, so that `_wait` returns)."""
        del t  # the exit time, which the reader put in inst.console
        self.vmm.end_idle(inst)

    def _wait(self, inst: Instance, timeout: float) -> int:
        rc = self.vmm.wait(inst, timeout)
        if inst.console.t_halted_ns is not None:  # an image halted: its VMM was ended
            return vm_image.halted_exit(self.label, inst, self.options)
        if inst.console.guest_status is not None:  # a Linux guest said how it ended
            return inst.console.guest_status
        if rc == self.clean_exit and inst.console.hello:
            return 0
        if self.boot.byo and rc in (0, self.clean_exit):
            return self.image_exit(inst, rc)
        return rc

    def image_exit(self, inst: Instance, rc: int) -> int:
        """An image's own status is not known: a clean VMM exit (`rc`) is its success only
        with the guest's own evidence, its console's output, and no crash line there. A
        VMM that refused the image exits with the same status (QEMU: 1, "invalid kernel
        header") having printed nothing of the guest's: that is an error with the VMM's
        words, never a boot."""
        if inst.console.t_first_output_ns is None:
            raise InstanceError(
                f"{self.label}: {inst.name}: the VMM exited (status {rc}) before its guest "
                f"printed anything, so nothing booted: {inst.log_tail()}"
            )
        if crash_line(inst.log_path):
            raise InstanceError(f"{self.label}: {inst.name}: {inst.log_tail()}")
        return 0

    def _stop(self, inst: Instance) -> None:
        self.vmm.stop(inst)
        vm_image.end(inst)

    def end_vmm(self, inst: Instance) -> None:
        """End `inst`'s VMM (after a checkpoint), keeping its cgroups for `restart`."""
        self.vmm.stop(inst)

    def restart(self, inst: Instance) -> None:
        """A new VMM for `inst`, in its cgroups (kept since its launch), its console read
        again: a restore's (the driver's `_command`/`_configure` see what it restores)."""
        if not self.vmm.prepared(inst):
            self.vmm.prepare(inst)
        self._start(inst, True)

    def image_size(self) -> tuple[int, str] | None:
        o = self.options

        def du(*files: Path | None) -> int:
            return sum(p.stat().st_blocks * 512 for p in files if p is not None)

        if self.boot.byo:
            return du(o.kernel, o.initrd, o.disk), "image files du"
        if self.ctx.rootfs is None:
            return None
        # auto: the run's artifact holds more than the minimal programs (servers, measuring
        # programs) exactly when some workload is not hello/sleep, i.e. boots Linux
        servers = not self.ctx.rootfs.name.startswith("rootfs-minimal")
        if o.guest == "linux" or (o.guest == "auto" and servers):
            return du(*self.boot.linux(self.ctx.rootfs)), "Linux kernel + initramfs du"
        kernel = self.ctx.rootfs / KERNEL
        if not kernel.exists():
            return None
        if o.guest == "auto" and self.ctx.runs_commands:  # exec's instances boot Linux
            linux = du(*self.boot.linux(self.ctx.rootfs))
            return du(kernel) + linux, "guest kernel + Linux kernel + initramfs (exec's) du"
        return du(kernel), "guest kernel du"
