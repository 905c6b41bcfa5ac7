"""`qemu`: one VM per instance under QEMU (machine microvm or q35, accel kvm or tcg).

Labels: `qemu` (= `qemu:microvm`, KVM), `qemu:q35`, and `qemu:microvm:tcg`,
`qemu:q35:tcg` for emulation; `[runtime.qemu]` sets vcpus, guest memory (`memory_mib`
of the instance, else `memory_mib` here), the `-cpu` model and q35's firmware (qboot,
the default, or SeaBIOS).

The guest is the artifact's minimal kernel (`/boot/vb-minikernel`, guest/minikernel/: a
freestanding PVH kernel without FPU/SSE, which boots even under the nested PVM KVM of
hosts where Linux guests cannot): workload `hello` prints its marker and powers the VM
off, `sleep` prints `VB-READY <name>` and halts. Other workloads need a Linux guest,
which this driver does not boot yet: they are refused before anything starts.

Timeline: spawn (QEMU exec'd, in the instance's cgroups through vb-cgexec as for
native), first serial output (`inst.extra["t_first_output_ns"]`, stamped by the thread
that reads the serial console), ready (the `VB-READY` line, handed to the probe listener
as if it were a datagram), exit (the QEMU process ends: isa-debug-exit makes it exit with
status 1 for the guest's 0, reported as 0 once the hello marker was seen). The QEMU
process and its threads are the instance's host processes (memory, cleanup). Samples
under TCG are marked emulated.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from virtbench import proc
from virtbench.errors import InstanceError
from virtbench.measure import memory
from virtbench.runtimes.base import Availability, Family, Instance, RuntimeContext, which
from virtbench.runtimes.native import Native

KERNEL = "boot/vb-minikernel"  # inside the artifact rootfs
MACHINES = ("microvm", "q35")
ACCELS = ("kvm", "tcg")
FIRMWARE = {"qboot": "/usr/share/qemu/qboot.rom", "seabios": None}  # None: QEMU's default
MARKER = re.compile(rb"VB-(READY|HELLO) (\S+)")


class QemuOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    variant: str = "microvm"  # machine[:accel], what a label such as qemu:q35:tcg sets
    vcpus: int = Field(default=1, ge=1, le=256)
    memory_mib: int = Field(default=64, ge=16, le=1 << 22)  # when the instance sets none
    cpu: str | None = None  # -cpu; default: host,-arch-capabilities (kvm), max (tcg)
    firmware: Literal["qboot", "seabios"] = "qboot"  # q35 only; microvm always uses qboot
    binary: str = "qemu-system-x86_64"

    @field_validator("variant")
    @classmethod
    def _variant(cls, v: str) -> str:
        machine, _, accel = v.partition(":")
        if machine not in MACHINES or (accel and accel not in ACCELS):
            machines, accels = ", ".join(MACHINES), ", ".join(ACCELS)
            raise ValueError(f"got {v!r}, expected machine[:accel] (machine: {machines}; "
                             f"accel: {accels})")  # fmt: skip
        return v

    @property
    def machine(self) -> str:
        return self.variant.partition(":")[0]

    @property
    def accel(self) -> str:
        return self.variant.partition(":")[2] or "kvm"


def guest_mode(argv: tuple[str, ...]) -> str | None:
    """The minimal guest's mode for a workload's argv: hello, sleep, or None."""
    if argv == ("/bin/vb-hello",):
        return "hello"
    if argv and argv[0] == "/bin/vb-ready" and argv[-1] == "/bin/vb-sleep":
        return "sleep"
    return None


class Qemu(Native):
    name = "qemu"
    family = Family.VM
    description = "QEMU VM (microvm or q35, KVM or TCG) booting the minimal guest kernel"
    networks: ClassVar[tuple[str, ...]] = ("none",)
    Options = QemuOptions
    variant_option = "variant"
    variants: ClassVar[tuple[str, ...]] = (*MACHINES, *(f"{m}:tcg" for m in MACHINES))
    default_variant = "microvm"

    def __init__(self, ctx: RuntimeContext, *args: Any, **kwargs: Any) -> None:
        super().__init__(ctx, *args, **kwargs)
        self._readers: dict[str, threading.Thread] = {}

    @property
    def opts(self) -> QemuOptions:
        assert isinstance(self.options, QemuOptions)
        return self.options

    @property
    def emulated(self) -> bool:
        return self.opts.accel == "tcg"

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        opts = options if isinstance(options, QemuOptions) else QemuOptions()
        path = which(opts.binary)
        if path is None:
            return Availability(False, reason=f"{opts.binary} not on PATH",
                                fix="apt-get install qemu-system-x86")  # fmt: skip
        if opts.accel == "kvm" and not os.access("/dev/kvm", os.R_OK | os.W_OK):
            fix = "load kvm_intel or kvm_amd, or use qemu:<machine>:tcg"
            return Availability(False, reason="/dev/kvm missing or not accessible", fix=fix)
        base = super().available(options)
        if not base.ok:
            return base
        try:
            out = proc.run([path, "--version"], timeout=10).stdout
        except Exception as exc:
            return Availability(False, reason=f"{opts.binary} --version failed: {exc}")
        m = re.search(r"version (\S+)", out)
        return Availability(True, version=m.group(1) if m else "?")

    @classmethod
    def cannot_run(cls, workload: str) -> str | None:
        if workload in ("hello", "sleep"):
            return None
        return "its minimal guest runs only hello and sleep (Linux guests: not yet)"

    def _prepare(self, inst: Instance) -> None:
        if guest_mode(inst.spec.argv) is None:
            raise InstanceError(
                f"{self.label}: the minimal guest runs only the hello and sleep workloads "
                f"(got {' '.join(inst.spec.argv)}); Linux guests are not supported yet"
            )
        kernel = inst.spec.rootfs / KERNEL
        if not kernel.is_file():
            raise InstanceError(f"{self.label}: no guest kernel at {kernel} (run make setup)")
        super()._prepare(inst)

    def _command(self, inst: Instance) -> list[str]:
        o, spec = self.opts, inst.spec
        cpu = o.cpu or ("host,-arch-capabilities" if o.accel == "kvm" else "max")
        argv = [
            which(o.binary) or o.binary, "-name", inst.name,
            "-M", o.machine, "-accel", o.accel, "-cpu", cpu,
            "-smp", str(o.vcpus), "-m", str(spec.memory_mib or o.memory_mib),
            "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
            "-serial", "stdio", "-no-reboot",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04",
            "-kernel", str(spec.rootfs / KERNEL),
            "-append", f"vb.mode={guest_mode(spec.argv)} vb.name={inst.name}",
        ]  # fmt: skip
        firmware = FIRMWARE[o.firmware] if o.machine == "q35" else None
        if firmware:
            argv += ["-bios", firmware]
        return argv

    def _start(self, inst: Instance, detach: bool) -> None:
        del detach  # both ways the VM runs on; run_to_exit waits for QEMU to end
        dirs = self._dirs.pop(inst.name)
        launcher = [str(inst.spec.rootfs / "bin" / "vb-cgexec"), *map(str, dirs), "--"]
        env = {"PATH": "/usr/bin:/bin", "VIRTBENCH_INSTANCE": inst.name}  # found by clean
        argv = [*launcher, *self._command(inst)]
        with open(inst.log_path, "ab") as log:
            inst.proc = proc.spawn(argv, stdout=subprocess.PIPE, stderr=log.fileno(), env=env)
        reader = threading.Thread(target=self._read_console, args=(inst,), daemon=True,
                                  name=f"vb-console-{inst.name}")  # fmt: skip
        self._readers[inst.name] = reader
        reader.start()

    def _read_console(self, inst: Instance) -> None:
        """Copy the serial console to the log, stamping its first byte and the markers."""
        assert inst.proc is not None and inst.proc.stdout is not None
        fd = inst.proc.stdout.fileno()
        pending = b""
        with open(inst.log_path, "ab", buffering=0) as log:
            while True:
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                t = time.monotonic_ns()
                if not chunk:
                    break
                inst.extra.setdefault("t_first_output_ns", t)
                log.write(chunk)
                pending = (pending + chunk)[-256:]
                for m in MARKER.finditer(pending):
                    if m.group(2).decode(errors="replace") != inst.name:
                        continue
                    if m.group(1) == b"READY" and "t_ready_ns" not in inst.extra:
                        inst.extra["t_ready_ns"] = t
                        if self.ctx.probe is not None:
                            self.ctx.probe.mark(inst.name, t)
                    elif m.group(1) == b"HELLO":
                        inst.extra["hello"] = True
                pending = pending[pending.rfind(b"\n") + 1 :]

    def _wait(self, inst: Instance, timeout: float) -> int:
        assert inst.proc is not None
        rc = proc.wait(inst.proc, timeout)
        t_exit = time.monotonic_ns()
        reader = self._readers.get(inst.name)
        if reader is not None:
            reader.join(timeout=5)  # the console is read to its end: the marker counts
        inst.t_exit_ns = t_exit
        # isa-debug-exit: QEMU exits with (value << 1) | 1; the guest writes 0
        return 0 if rc == 1 and inst.extra.get("hello") else rc

    def _stop(self, inst: Instance) -> None:
        super()._stop(inst)
        reader = self._readers.pop(inst.name, None)
        if reader is not None:
            reader.join(timeout=5)
        if inst.proc is not None and inst.proc.stdout is not None:
            inst.proc.stdout.close()

    def guest_ram_pss(self, inst: Instance) -> int | None:
        size_kib = (inst.spec.memory_mib or self.opts.memory_mib) * 1024
        found = [memory.pss_of_mappings(pid, size_kib) for pid in self.pids(inst)]
        values = [v for v in found if v is not None]
        return sum(values) if values else None

    def image_size(self) -> tuple[int, str] | None:
        if self.ctx.rootfs is None:
            return None
        kernel = self.ctx.rootfs / KERNEL
        return (kernel.stat().st_blocks * 512, "guest kernel du") if kernel.exists() else None
