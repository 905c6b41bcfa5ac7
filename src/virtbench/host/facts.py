"""Host facts for the environment snapshot and `doctor`.

Every run stores a snapshot of the keys in `snapshot()`: kernel, CPU model and count,
SMT, memory, swap, KVM kind, cgroup version, runtime and tool versions.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
from pathlib import Path
from typing import Any

import psutil

from virtbench import __version__
from virtbench.errors import VirtbenchError
from virtbench.host import cgroups, proc, systemd


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def smt_active() -> bool | None:
    p = Path("/sys/devices/system/cpu/smt/active")
    try:
        return p.read_text().strip() == "1"
    except OSError:
        return None


def smt_control(path: Path = Path("/sys/devices/system/cpu/smt/control")) -> str:
    """SMT as the kernel controls it: on, off, forceoff, notsupported, notimplemented
    (or "unknown" where the file is missing)."""
    try:
        return path.read_text().strip()
    except OSError:
        return "unknown"


def mitigations(
    vulns: Path = Path("/sys/devices/system/cpu/vulnerabilities"),
    cmdline: Path = Path("/proc/cmdline"),
) -> dict[str, Any]:
    """CPU vulnerability mitigations, which change syscall and context-switch cost
    several-fold: the kernel's `mitigations=` setting (default auto), each vulnerability's
    state as the kernel reports it, and a count per kind (mitigated, vulnerable, not
    affected, other)."""
    try:
        words = cmdline.read_text().split()
    except OSError:
        words = []
    setting = next((w.split("=", 1)[1] for w in words if w.startswith("mitigations=")), "auto")
    states: dict[str, str] = {}
    try:
        for f in sorted(vulns.iterdir()):
            try:
                states[f.name] = f.read_text().strip()
            except OSError as exc:
                states[f.name] = f"unreadable ({exc.strerror})"
    except OSError as exc:
        return {"setting": setting, "error": f"{vulns}: {exc.strerror}"}
    counts = {"mitigated": 0, "vulnerable": 0, "not affected": 0, "other": 0}
    for text in states.values():
        if text.startswith("Mitigation"):
            counts["mitigated"] += 1
        elif text.startswith("Vulnerable"):
            counts["vulnerable"] += 1
        elif text.startswith("Not affected"):
            counts["not affected"] += 1
        else:
            counts["other"] += 1
    return {"setting": setting, "counts": counts, "vulnerabilities": states}


@functools.cache
def virtualization() -> str:
    """What this host is a virtual machine of, as systemd-detect-virt tells it from the
    CPU's hypervisor leaf ("none" on bare metal; "kvm"; "qemu" where QEMU emulates the
    machine, TCG; "unknown" where it cannot tell)."""
    if shutil.which("systemd-detect-virt") is None:
        return "unknown"
    res = proc.run(["systemd-detect-virt", "--vm"], check=False, timeout=10)
    return res.stdout.strip() or "unknown"


def emulated_host() -> bool:
    """Whether QEMU emulates this whole host (TCG): every figure taken on it is emulated,
    functional only, whatever runtime took it."""
    return virtualization() == "qemu"


def kvm_kind(sys_module: Path = Path("/sys/module"), dev: Path = Path("/dev/kvm")) -> str:
    """none | pvm | nested | hardware: what /dev/kvm is, which decides what guests boot."""
    if not dev.exists():
        return "none"
    if (sys_module / "kvm_pvm").exists():
        return "pvm"
    hypervisor = "hypervisor" in Path("/proc/cpuinfo").read_text().split("flags", 1)[-1][:4000]
    return "nested" if hypervisor else "hardware"


def tool_version(argv: list[str]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        out = proc.run(argv, timeout=10, check=False)
    except VirtbenchError:
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0] if text else None


def lsm(security: Path = Path("/sys/kernel/security"), sys: Path = Path("/sys")) -> str:
    """The host's security module that confines containers: "apparmor", "selinux" or
    "none". From securityfs's list of active modules, else (securityfs not mounted) the
    modules' own switches."""
    try:
        active = (security / "lsm").read_text().strip().split(",")
    except OSError:
        active = []
    try:
        apparmor = (sys / "module/apparmor/parameters/enabled").read_text().strip() == "Y"
    except OSError:
        apparmor = False
    if "apparmor" in active or (not active and apparmor):
        return "apparmor"
    if "selinux" in active or (not active and (sys / "fs/selinux/enforce").exists()):
        return "selinux"
    return "none"


TOOLS = {
    "musl-gcc": None,  # the guest compiler: presence only
    "hyperfine": ["hyperfine", "--version"],
    "ip": ["ip", "-V"],
}


def snapshot(runtime_versions: dict[str, str]) -> dict[str, Any]:
    """The environment snapshot stored with each run."""
    vm = psutil.virtual_memory()
    sw = psutil.swap_memory()
    layout = cgroups.Layout.detect()
    tools = {}
    for name, argv in TOOLS.items():
        tools[name] = (tool_version(argv) if argv else shutil.which(name)) or "missing"
    return {
        "virtbench": __version__,
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": os_release(),
        "python": platform.python_version(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_allowed": sorted(os.sched_getaffinity(0)),
        "smt": smt_active(),
        "smt_control": smt_control(),
        "mitigations": mitigations(),
        "memory_bytes": vm.total,
        "swap_bytes": sw.total,
        "kvm": kvm_kind(),
        "virtualization": virtualization(),
        "lsm": lsm(),
        "cgroup_version": cgroup_words(layout),
        "host_shape": {"init": init_system(), "cgroups": cgroup_words(layout)},
        "runtimes": runtime_versions,
        "tools": tools,
    }


def cgroup_words(layout: cgroups.Layout) -> str:
    """v1, v1 (hybrid), v2 or none."""
    return {1: "v1 (hybrid)" if layout.unified else "v1", 2: "v2"}.get(layout.version, "none")


def init_system() -> str:
    """The host's init as it shapes what virtbench does: "systemd" (sd_booted: it owns the
    cgroup tree and runs the engines' services), else "no systemd"."""
    return "systemd" if systemd.booted() else "no systemd"


def platform_words() -> str:
    """This host's platform in a line: `Debian GNU/Linux 13 (trixie), systemd, cgroup v2,
    KVM hardware`."""
    layout = cgroups.Layout.detect()
    words = f"{os_release()}, {init_system()}, cgroup {cgroup_words(layout)}"
    return f"{words}, KVM {kvm_kind()}"


def os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.platform()
