"""What a VM boots: the options every VM driver takes (`[runtime.<name>]`: the guest, its
files, memory, vCPUs, data disk) and how a workload picks the guest (runtimes/vm/base.py runs it).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from virtbench import workloads

KERNEL = "boot/vb-minikernel"  # inside the artifact rootfs
MEMORY_MIB = {"minimal": 64, "image": 64, "linux": 512}  # when neither instance nor option says
LINUX_CMDLINE = "console=ttyS0 panic=-1 quiet rdinit=/init"
SIMPLE = ("hello", "sleep", "beat")  # the workloads the minimal guest (and an image) can be
# runtimes/vm/presets.py's PRESETS (test_images.py checks that the two agree)
PresetName = Literal["unikraft", "osv", "nanos", "includeos", "solo5", "ukl", "linux", "rumprun"]


class VmOptions(BaseModel):
    """Options every VM driver takes (`[runtime.<name>]`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    # an image's kernel is required as the options are read (False: the driver refuses to
    # run without one instead, so that `doctor` can ask about its binary alone)
    kernel_required: ClassVar[bool] = True

    vcpus: int = Field(default=1, ge=1, le=256)
    # when the instance sets none; default 64 (minimal guest, image) or 512 (Linux)
    memory_mib: int | None = Field(default=None, ge=16, le=1 << 22)
    binary: str = ""  # the VMM's executable, looked up on PATH (driver default when empty)
    guest: Literal["auto", "minimal", "linux", "image"] = "auto"
    # guest = "image": files built elsewhere, and how to tell it is up; guest = "linux": a
    # kernel of your own (default Debian's cloud kernel) and `cmdline` added to vb-init's
    kernel: Path | None = None
    initrd: Path | None = None
    # an image's disk; alone (no kernel), one that boots by itself through the firmware
    disk: Path | None = None
    cmdline: str = ""
    ready: str | None = None  # regular expression on the serial console (sleep workload)
    # guest = "image" that serves: what (one of the services the workloads declare an
    # image may serve: workloads.image_services), on which port, and how it learns its
    # address (a preset's command-line convention, runtimes/vm/presets.py)
    serves: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    preset: PresetName | None = None
    # guest = "image": a blank read-write disk of this size per instance (raw, sparse;
    # "ext4": formatted), attached after `disk`, removed with the instance
    scratch_disk_mib: int | None = Field(default=None, ge=1, le=1 << 22)
    scratch_format: Literal["raw", "ext4"] = "raw"
    # guest = "image" that takes its address by DHCP: the run's bridge serves each instance
    # its address (its preset may say so: nanos)
    dhcp: bool = False
    # a Linux guest's data disk (workloads whose needs.data is set: fio, sysbench fileio,
    # databases): a sparse ext4 image of this size made per instance, at /data, removed with it
    data_disk_mib: int = Field(default=8192, ge=64, le=1 << 22)

    @field_validator("kernel", "initrd", "disk")
    @classmethod
    def _exists(cls, v: Path | None) -> Path | None:
        if v is not None and not v.is_file():
            raise ValueError(f"no such file: {v}")
        return v

    @field_validator("ready")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v.encode())
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc}): {v!r}") from None
        return v

    @model_validator(mode="after")
    def _image(self) -> VmOptions:
        no_file = self.kernel is None and self.disk is None
        if self.guest == "image" and no_file and self.kernel_required:
            raise ValueError(
                'guest = "image" needs kernel = "/path/to/kernel" (or disk = "/path/to/'
                'disk.img" alone: an image that boots from its own disk)'
            )
        if self.guest == "linux" and any((self.initrd, self.disk, self.ready)):
            raise ValueError(
                'initrd, disk and ready need guest = "image" (a Linux guest\'s '
                "initramfs is built from the artifact)"
            )
        if self.guest in ("auto", "minimal") and any(
            (self.kernel, self.initrd, self.disk, self.cmdline, self.ready)
        ):
            raise ValueError(
                'kernel, initrd, disk, cmdline and ready need guest = "image" '
                '(or "linux": kernel and cmdline)'
            )
        image_only = {
            "serves": self.serves,
            "port": self.port,
            "preset": self.preset,
            "scratch_disk_mib": self.scratch_disk_mib,
            "dhcp": self.dhcp or None,
        }
        given = [k for k, v in image_only.items() if v is not None]
        if self.guest != "image" and given:
            raise ValueError(f'{", ".join(given)} need guest = "image"')
        if self.port is not None and self.serves is None:
            others = ", ".join(workloads.image_services())
            raise ValueError(
                f'port is the port an image serves on: give serves = "http" (or {others})'
            )
        if self.port is not None and self.service is not None and not self.service.port:
            raise ValueError(f"an image that serves {self.serves} listens on no port: remove port")
        return self

    @field_validator("serves")
    @classmethod
    def _known_service(cls, v: str | None) -> str | None:
        known = workloads.image_services()
        if v is not None and v not in known:
            raise ValueError(f"{v!r} is not a service an image may serve ({', '.join(known)})")
        return v

    @property
    def wants_dhcp(self) -> bool:
        """Its instances take their address by DHCP (the option, or the preset's way)."""
        if self.dhcp:
            return True
        from virtbench.runtimes.vm import presets

        return self.preset is not None and presets.PRESETS[self.preset].dhcp

    @property
    def boots_disk(self) -> bool:
        """An image given as a disk alone: the firmware boots it from its boot sector."""
        return self.guest == "image" and self.kernel is None and self.disk is not None

    @property
    def service(self) -> workloads.ImageService | None:
        """What the image serves, as its workloads declare it (None: nothing)."""
        return workloads.image_services()[self.serves] if self.serves is not None else None

    @property
    def serve_port(self) -> int | None:
        """The port an image serves on (None: it serves nothing)."""
        if self.service is None:
            return None
        return self.port or self.service.port


def image_cannot_run(workload: str, opts: VmOptions) -> str | None:
    """Why an image (guest = "image") cannot run `workload`, or None."""
    if (why := disk_cmdline_problem(opts)) is not None:
        return why
    if workload == "hello":
        return None  # it boots and powers off: spawn -> exit
    served = opts.service.workloads if opts.service is not None else ()
    if workload == "sleep" or workload in served:
        if opts.ready is None and opts.serves is None:
            return (
                'an image that keeps running needs ready = "<regex on its console>" or '
                'serves = "http" (ready when its port answers)'
            )
        return None
    if opts.serves is None:
        return (
            'an image runs as hello or sleep unless it serves: set serves = "http" (or '
            f"{', '.join(s for s in workloads.image_services() if s != 'http')}) and its "
            "port"
        )
    return (
        f"this image serves {opts.serves}: it runs {', '.join(served)}, sleep and hello, "
        f"not {workload}"
    )


def disk_cmdline_problem(opts: VmOptions) -> str | None:
    """Why an image that boots from its disk cannot be given its command line, or None:
    the firmware passes none, so it goes only where the preset's guest reads it on its
    disk (OSv's); a preset that says nothing (nanos) needs no place."""
    if not opts.boots_disk:
        return None
    from virtbench.runtimes.vm import presets

    p = presets.PRESETS[opts.preset] if opts.preset is not None else None
    says = bool(opts.cmdline) or (p is not None and bool(p.always or p.network))
    if says and (p is None or p.cmdline_on_disk is None):
        return (
            "it boots from its disk, which gets no kernel command line: give kernel = "
            'as well, or preset = "osv" (whose line virtbench writes on the disk), or '
            "no cmdline"
        )
    return None


def mac_of(ip: str) -> str:
    """A locally administered unicast MAC for a guest, from its IPv4 address."""
    return "06:00:" + ":".join(f"{int(b):02x}" for b in ip.split("."))


def guest_mode(argv: tuple[str, ...]) -> str | None:
    """The minimal guest's mode for a workload's argv: hello, sleep, beat, or None."""
    if argv == ("/bin/vb-hello",):
        return "hello"
    if len(argv) == 3 and argv[0] == "/bin/vb-sleep":
        return "sleep"
    if len(argv) in (5, 6) and argv[0] == "/bin/vb-ready" and argv[3] == "--beat":
        return "beat"
    return None
