"""`solo5-hvt` and `solo5-spt`: a Solo5 unikernel (MirageOS's base) run by its tender.

Solo5 builds one unikernel per target, and a *tender* runs it: `solo5-hvt` is a process
that runs the unikernel (`unikernel.hvt`) in a KVM virtual machine of its own making, with
no firmware, no emulated devices and no BIOS; `solo5-spt` runs it (`unikernel.spt`) as
the tender's own Linux process, shut in by a seccomp filter that allows only the calls its
devices need (no KVM). Either is an image built elsewhere (`guest = "image"`, always:
`kernel` is the unikernel), started as

    solo5-hvt --mem=<memory_mib> [--net:<dev>=<tap> --net-mac:<dev>=<mac>] UNIKERNEL ARGS

in the instance's cgroups (vb-cgexec, like any VMM here). The tender prints nothing of its
own on success: its stdout is the unikernel's console (Solo5's banner, then the
application's lines), its stderr its own errors (`<instance>.vmm.log`). A unikernel's
`solo5_exit(n)` is the tender's exit status (n & 0xff); the tender's own failures exit 1.

The devices a unikernel needs are declared in its manifest, which every tender requires to
be attached in full: the driver reads it (`solo5-elftool query-manifest`, beside the
tender or on PATH) and gives its one network device, if it has one, a tap on the run's
bridge (a unikernel without one runs on no network). Block devices take `disk`, per
instance a copy-on-write layer would need (not done: a manifest that declares one is
refused). The address goes on the unikernel's command line by its preset (`solo5`:
MirageOS's `--ipv4=`).

Timeline: spawn (the tender exec'd), first output (the banner), ready (`ready`, a regular
expression on the console, or the served port answering), exit (the tender's). hello is a
boot only with the unikernel's own output on the console and status 0 (vm/base.py).
Memory: the tender's PSS, of which the guest's: its memory mapping of `memory_mib`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import model_validator

from virtbench.errors import InstanceError, VirtbenchError
from virtbench.host import proc
from virtbench.runtimes.base import Family, Instance, RuntimeContext, which
from virtbench.runtimes.vm.base import Vm, VmOptions

BUILD = (
    "build Solo5 (github.com/Solo5/solo5: ./configure.sh && make; needs libseccomp-dev) "
    "and put tenders/{tender}/solo5-{tender} on PATH, or set binary = its path"
)


class Solo5Options(VmOptions):
    """A tender's: the unikernel is `kernel` (guest is always "image")."""

    guest: Literal["image"] = "image"  # type: ignore[assignment]  # a tender runs nothing else
    elftool: str = "solo5-elftool"  # reads the manifest: beside the tender, else on PATH
    kernel_required: ClassVar[bool] = False  # Solo5.cannot_run says so instead

    @model_validator(mode="after")
    def _tender(self) -> Solo5Options:
        if self.initrd is not None:
            raise ValueError("a Solo5 tender takes no initrd (the unikernel is one file)")
        if self.disk is not None:
            raise ValueError(
                "a Solo5 tender's block devices are not supported yet: give a unikernel "
                "whose manifest declares none"
            )
        return self


class Solo5(Vm):
    """Base of the two tenders (not a runtime of its own)."""

    tender: ClassVar[str] = ""
    Options: ClassVar[type[Solo5Options]] = Solo5Options
    options: Solo5Options

    def __init__(self, ctx: RuntimeContext, *args: Any, **kwargs: Any) -> None:
        super().__init__(ctx, *args, **kwargs)
        self._manifests: dict[Path, list[dict[str, str]]] = {}

    @classmethod
    def version_of(cls, path: str) -> str:
        """The tender says its version on stderr ("solo5-hvt tender, version v0.12.1")."""
        res = proc.run([path, "--version"], timeout=10)
        m = re.search(r"version v?(\d+\.\d+\S*)", res.stdout + res.stderr)
        return m.group(1) if m else "?"

    @classmethod
    def cannot_run(cls, workload: str, options: VmOptions | None = None) -> str | None:
        if options is None or options.kernel is None:
            return (
                f'{cls.name} runs a unikernel of yours: give kernel = "/path/to/unikernel.'
                f'{cls.tender}" in a named runtime (docs/images.md)'
            )
        return super().cannot_run(workload, options)

    def elftool(self) -> str:
        """solo5-elftool: beside the tender (a build tree's tenders/ has none: its
        elftool is in elftool/), else on PATH."""
        tender = which(self.binary_of(self.options))
        if tender is not None:
            beside = Path(tender).parent / "solo5-elftool"
            if os.access(beside, os.X_OK):
                return str(beside)
        return which(self.options.elftool) or self.options.elftool

    def manifest(self, kernel: Path) -> list[dict[str, str]]:
        """The devices `kernel`'s manifest declares ({"name", "type"}), read once."""
        if kernel not in self._manifests:
            try:
                out = proc.run([self.elftool(), "query-manifest", str(kernel)], timeout=30)
                devices = json.loads(out.stdout)["devices"]
            except (VirtbenchError, OSError, ValueError, KeyError) as exc:
                raise InstanceError(
                    f"{self.label}: cannot read the manifest of {kernel} (is it a Solo5 "
                    f"unikernel? solo5-elftool query-manifest): {exc}"
                ) from None
            self._manifests[kernel] = devices
        return self._manifests[kernel]

    def net_device(self, inst: Instance) -> str | None:
        """The unikernel's network device's name (its manifest's), or None."""
        kernel = self.boot.kernel(inst)
        devices = self.manifest(kernel)
        nets = [d["name"] for d in devices if d["type"] == "NET_BASIC"]
        others = [f"{d['name']} ({d['type']})" for d in devices if d["type"] != "NET_BASIC"]
        if others or len(nets) > 1:
            raise InstanceError(
                f"{self.label}: {kernel} declares devices virtbench cannot attach "
                f"({', '.join(others + nets[1:])}): one network device at most"
            )
        return nets[0] if nets else None

    def effective_network(self, requested: str) -> str:
        """A unikernel is on the bridge exactly when its manifest declares a network
        device (the tender refuses it otherwise)."""
        kernel = self.options.kernel
        assert kernel is not None
        nets = [d for d in self.manifest(kernel) if d["type"] == "NET_BASIC"]
        return "bridge" if nets else "none"

    def _command(self, inst: Instance) -> list[str]:
        argv = [which(self.binary_of(self.options)) or self.binary_of(self.options)]
        boot = self.boot
        argv.append(f"--mem={boot.memory_mib(inst)}")
        dev = self.net_device(inst)
        if dev is not None:
            if not inst.own.tap:
                raise InstanceError(f"{self.label}: {inst.name} has no tap for {dev}")
            argv += [f"--net:{dev}={inst.own.tap}", f"--net-mac:{dev}={inst.own.mac}"]
        return [*argv, str(boot.kernel(inst)), *shlex.split(boot.cmdline(inst))]


class Solo5Hvt(Solo5):
    name = "solo5-hvt"
    tender = "hvt"
    typical_launch_s = 0.05  # start + stop here without earlier boots
    description = "Solo5 unikernel (MirageOS's base) in a KVM VM of its hvt tender"
    default_binary = "solo5-hvt"
    get_it = BUILD.format(tender="hvt")


class Solo5Spt(Solo5):
    name = "solo5-spt"
    tender = "spt"
    family = Family.SANDBOX
    typical_launch_s = 0.02
    description = "Solo5 unikernel as a seccomp-sandboxed process of its spt tender (no KVM)"
    default_binary = "solo5-spt"
    get_it = BUILD.format(tender="spt")

    @classmethod
    def needs_kvm(cls, options: VmOptions | None) -> bool:
        del options
        return False
