"""`virtbench doctor`: an ordered list of small checks, each able to show and explain.

Runtimes first (available or not, version, and when not, why and the command that
fixes it; then the sandboxes it has no driver for, with what they need and where they
come from), then host facts that decide what results mean (CPUs, SMT, memory, swap,
cgroups, KVM kind, kernel), then what virtbench itself needs (root, guest compiler).
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import psutil

from virtbench.host import cgroups, facts

GIB = 1024**3


@dataclass(frozen=True)
class Check:
    """One line of doctor output. status: ok | warn | fail | info."""

    name: str
    status: str
    detail: str
    fix: str = ""


def runtime_checks(found: Iterable[tuple[str, Any]]) -> Iterator[Check]:
    """One line per runtime and per variant (docker:crun, podman:runsc, ...): `found` holds
    each label with its availability (`ok`, `version`, `reason`, `fix`), or the exception
    its driver raised."""
    for name, avail in found:
        if isinstance(avail, Exception):
            yield Check(f"runtime {name}", "fail", f"driver failed to load: {avail}")
        elif avail.ok:
            yield Check(f"runtime {name}", "ok", f"available, version {avail.version}")
        else:
            yield Check(f"runtime {name}", "fail", avail.reason, avail.fix)


# Sandboxes people compare that virtbench has no driver for, and that Debian 12 does not
# ship: (name, its commands, what it needs, where it comes from).
ELSEWHERE = (
    (
        "kata",
        ("kata-runtime", "containerd-shim-kata-v2"),
        "KVM that boots Linux guests (not a nested PVM) and Kata's guest kernel and image",
        "the releases of github.com/kata-containers/kata-containers",
    ),
    (
        "krun",
        ("krun",),
        "KVM, libkrun and libkrunfw (crun built with libkrun runs each container in a microVM)",
        "Fedora's crun-krun, or crun built from source with --with-libkrun",
    ),
    (
        "microsandbox",
        ("msb", "msbserver"),
        "KVM and libkrun",
        "the releases of github.com/microsandbox/microsandbox",
    ),
)


def elsewhere_checks() -> Iterator[Check]:
    """A line per sandbox virtbench cannot drive: found on PATH or not, what it needs and
    where it comes from (never an install virtbench makes)."""
    for name, commands, needs, where in ELSEWHERE:
        found = next((p for c in commands if (p := shutil.which(c))), None)
        state = f"{found} is here, but" if found else "not installed;"
        yield Check(
            f"runtime {name}",
            "info",
            f"{state} virtbench has no driver for it: it "
            f"needs {needs}; it comes from {where} (not in Debian 12)",
        )


def host_checks() -> Iterator[Check]:
    yield Check("platform", "info", facts.platform_words())
    n = os.cpu_count() or 0
    yield Check(
        "cpus",
        "info" if n > 2 else "warn",
        f"{n} online ({facts.cpu_model()}); "
        + (
            "clients can be pinned away from instances"
            if n > 2
            else "too few to pin clients away from instances: results say so"
        ),
    )
    smt = facts.smt_active()
    yield Check("smt", "info", {True: "active", False: "off", None: "unknown"}[smt])
    vm, sw = psutil.virtual_memory(), psutil.swap_memory()
    yield Check(
        "memory", "info", f"{vm.total / GIB:.1f} GiB total, {vm.available / GIB:.1f} GiB available"
    )
    yield Check("swap", "info", f"{sw.total / GIB:.1f} GiB" if sw.total else "none")
    layout = cgroups.Layout.detect()
    if layout.version == 0:
        yield Check(
            "cgroups", "fail", "no cgroup hierarchy mounted", "mount cgroup2 or v1 hierarchies"
        )
    elif layout.hybrid_without_hugetlb:
        yield Check(
            "cgroups", "warn", "v1 hybrid without hugetlb (crun refuses)", "virtbench setup"
        )
    else:
        kind = "v2" if layout.version == 2 else ("v1 (hybrid)" if layout.unified else "v1")
        if layout.delegated:
            kind += f" (systemd owns the tree: virtbench's cgroups are under {layout.parent})"
        yield Check("cgroups", "ok", kind)
    yield init_check()
    kvm = facts.kvm_kind()
    meaning = {
        "none": "no /dev/kvm: VM runtimes emulate (TCG), results are functional only",
        "pvm": "nested PVM: only the minimal guest boots under KVM; Linux guests need TCG",
        "nested": "nested KVM: guests boot, timings include the outer hypervisor",
        "hardware": "hardware KVM",
    }[kvm]
    yield Check("kvm", "info" if kvm in ("hardware", "nested") else "warn", f"{kvm}: {meaning}")
    yield Check("kernel", "info", platform.release())


def init_check() -> Check:
    """The host's init, which decides who runs the engines' daemons and owns the cgroups."""
    init = facts.init_system()
    if init == "systemd":
        return Check(
            "init",
            "info",
            "systemd: engines running as its services are used as they are (never "
            "restarted or reconfigured); containers an engine places through systemd sit "
            "in a slice of the run's (vb-<run>.slice)",
        )
    return Check(
        "init",
        "info",
        f"{init}: virtbench starts the daemons it needs and stops them after",
    )


def self_checks() -> Iterator[Check]:
    if os.geteuid() != 0:
        yield Check(
            "root",
            "fail",
            "not root: runtimes, cgroups and networks need root",
            "sudo virtbench ...",
        )
    else:
        yield Check("root", "ok", "running as root")
    if shutil.which("musl-gcc"):
        yield Check("guest compiler", "ok", "musl-gcc found")
    else:
        yield Check("guest compiler", "fail", "musl-gcc not found", "apt-get install musl-tools")
    if shutil.which("ip"):
        yield Check("iproute2", "ok", "ip found (bridge networks)")
    else:
        yield Check("iproute2", "fail", "ip not found", "apt-get install iproute2")


def all_checks(runtimes: Iterable[tuple[str, Any]]) -> Iterator[Check]:
    """Every check, the runtimes' first (`runtime_checks`)."""
    yield from runtime_checks(runtimes)
    yield from elsewhere_checks()
    yield from host_checks()
    yield from self_checks()
