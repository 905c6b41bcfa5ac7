"""`runsc`: gVisor's OCI runtime standalone, on the same bundles as runc and crun.

Options: `platform` (ptrace | kvm | systrap; which ones exist depends on the runsc build).
Where a platform cannot run on this host, `available()` says so instead of letting a
start hang: runsc's kvm platform spins at 100% CPU under a PVM or missing /dev/kvm.
The sandbox's own netstack fails on some kernels, so networks are `none` and `host`.
The ready probe reaches the host through a bind-mounted unix socket, which gVisor only
allows with `--host-uds=open`. The sandbox and gofer processes live in the instance's
cgroup, so memory accounting covers them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from virtbench import proc
from virtbench.measure.host import kvm_kind
from virtbench.runtimes.base import Availability, Family, Instance
from virtbench.runtimes.oci import OciRuntime


class RunscOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    platform: Literal["ptrace", "kvm", "systrap"] = "ptrace"


class Runsc(OciRuntime):
    name = "runsc"
    binary = "runsc"
    package = "runsc"
    family = Family.SANDBOX
    description = "gVisor sandbox (OCI), bundle from the artifact rootfs"
    networks = ("none", "host")
    Options = RunscOptions
    variant_option = "platform"
    variants = ("ptrace", "kvm", "systrap")
    default_variant = "ptrace"
    start_timeout = 30.0
    detach_flag = "--detach"

    @classmethod
    def available(cls, options: BaseModel | None = None) -> Availability:
        avail = super().available(options)
        if not avail.ok:
            return avail
        platform = getattr(options, "platform", "ptrace")
        res = proc.run([cls.binary, f"--platform={platform}", "list"], check=False, timeout=10)
        if "unknown platform" in res.stderr:
            return Availability(
                False,
                version=avail.version,
                reason=f"this runsc build has no platform {platform!r}",
                fix='use platform = "ptrace"',
            )
        if platform == "kvm" and (kind := kvm_kind()) in ("none", "pvm"):
            why = "no /dev/kvm" if kind == "none" else "/dev/kvm is a PVM hypervisor"
            return Availability(
                False,
                version=avail.version,
                reason=f"runsc platform kvm cannot run here ({why}; it would hang)",
                fix='use platform = "ptrace" (runsc:ptrace)',
            )
        return avail

    def global_args(self, inst: Instance) -> list[str]:
        network = self.effective_network(inst.spec.network)
        return [f"--platform={self.options.platform}", f"--network={network}", "--host-uds=open"]

    def hang_hint(self) -> str:
        return f" (platform {self.options.platform} may not work on this host)"
