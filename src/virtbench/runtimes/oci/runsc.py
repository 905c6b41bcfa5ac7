"""`runsc`: gVisor's OCI runtime standalone, on the same bundles as runc and crun.

Options: `platform` (ptrace | kvm | systrap; which ones exist depends on the runsc build).
Where a platform cannot run on this host, `available()` says so instead of letting a
start hang: runsc's kvm platform spins at 100% CPU under a PVM or missing /dev/kvm.
`netstack`: "host" (default) gives the sandbox the Linux network stack of its network
namespace (the host's, or the instance's own on the run's bridge: `--network=host`);
"gvisor" gives it gVisor's own stack (`--network=sandbox`), which is what a gVisor user
runs but fails on some hosts: `available()` then says why (a `runsc do` tried once). On
Linux 6.x, runsc builds from 2022 take any network namespace for the root one (they look
for net.core.rmem_default, which every namespace now has) and refuse to start it.
The ready probe reaches the host through a bind-mounted unix socket, which gVisor only
allows with `--host-uds=open`. The sandbox and gofer processes live in the instance's
cgroup, so memory accounting covers them.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Literal

from virtbench.errors import SpecError, VirtbenchError
from virtbench.host import proc
from virtbench.host.facts import kvm_kind
from virtbench.runtimes.base import Availability, Family, Instance
from virtbench.runtimes.oci.base import OciOptions, OciRuntime, OciSnapshot


class RunscOptions(OciOptions):
    platform: Literal["ptrace", "kvm", "systrap"] = "ptrace"
    netstack: Literal["host", "gvisor"] = "host"


@functools.cache
def netstack_problem(platform: str) -> str:
    """Why gVisor's own network stack cannot start here ("" when it can): a sandbox with
    it runs /bin/true once (in a network namespace of its own, removed with it)."""
    if os.geteuid() != 0:
        return "checking it takes root (a sandbox with its own network namespace)"
    try:
        res = proc.run(
            ["runsc", f"--platform={platform}", "--network=sandbox", "do", "/bin/true"],
            check=False,
            timeout=30,
        )
    except VirtbenchError as exc:
        return f"runsc do with --network=sandbox did not finish: {exc}"
    if res.returncode == 0:
        return ""
    lines = (res.stderr or res.stdout).strip().splitlines()
    why = lines[-1] if lines else f"exit status {res.returncode}"
    if "root network namespace" in why and Path("/proc/sys/net/core/rmem_default").exists():
        why += (
            " (this runsc takes every network namespace for the root one: it looks for "
            "net.core.rmem_default, which this kernel gives every namespace)"
        )
    return why


class RunscSnapshot(OciSnapshot):
    """`runsc checkpoint` and `restore`: gVisor saves the sandbox's own kernel state, so
    no CRIU is needed."""

    def problem(self) -> str | None:
        return None


class Runsc(OciRuntime):
    name = "runsc"
    typical_launch_s = 0.4  # start + stop here without earlier boots
    binary = "runsc"
    package = "runsc"
    family = Family.SANDBOX
    description = "gVisor sandbox (OCI), bundle from the artifact rootfs"
    networks = ("none", "host", "bridge")
    Options = RunscOptions
    options: RunscOptions
    variant_option = "platform"
    variants = ("ptrace", "kvm", "systrap")
    default_variant = "ptrace"
    start_timeout = 30.0
    detach_flag = "--detach"
    Snapshot = RunscSnapshot

    @classmethod
    def available(cls, options: OciOptions | None = None) -> Availability:
        assert options is None or isinstance(options, RunscOptions), "runsc takes its own"
        avail = super().available(options)
        if not avail.ok:
            return avail
        o = options or RunscOptions()
        platform = o.platform
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
        netstack = o.netstack
        if netstack == "gvisor" and (why := netstack_problem(platform)):
            return Availability(
                False,
                version=avail.version,
                reason=f"gVisor's own network stack cannot start here: {why}",
                fix='netstack = "host" (the network namespace\'s Linux stack)',
            )
        return avail

    def conditions(self) -> dict[str, Any]:
        """As any OCI runtime's; the engines' seccomp filter is in its bundle, as Docker
        hands it to runsc, which does not apply it (its Sentry filters its own calls to
        the host) unless given --oci-seccomp."""
        out = super().conditions()
        if out.get("security") == "engine-default":
            out["seccomp"] += " (in the bundle; runsc applies it only with --oci-seccomp)"
        return out

    def effective_network(self, requested: str) -> str:
        network = super().effective_network(requested)
        if network == "host" and self.options.netstack == "gvisor":
            raise SpecError(
                f'runtime {self.label}: netstack = "gvisor" needs a network namespace of its '
                'own: network "bridge" or "none", not "host"'
            )
        return network

    def global_args(self, inst: Instance) -> list[str]:
        network = self.effective_network(inst.spec.network)
        if network == "none":
            mode = "none"
        else:  # the stack of the namespace it runs in (the host's, or its own on a bridge)
            mode = "sandbox" if self.options.netstack == "gvisor" else "host"
        return [f"--platform={self.options.platform}", f"--network={mode}", "--host-uds=open"]

    def hang_hint(self) -> str:
        return f" (platform {self.options.platform} may not work on this host)"
