"""How an OCI bundle is confined: as the container engines confine theirs
(`security = "engine-default"`), or with capabilities, no-new-privileges and masked paths
alone (`"minimal"`).

The engines' default is a seccomp filter made from a template: containers-common's
seccomp.json (what podman, CRI-O and buildah load; Docker's built-in profile is the same
template), whose rules say for which capabilities, architectures and kernels they hold.
The engine keeps the rules that apply to the container's capabilities and the host's
architecture and kernel, and hands the runtime the result as the OCI `linux.seccomp`
section; `seccomp` does the same. Where the host enables AppArmor, the engines also
confine the container with their profile (`containers-default-*`, `docker-default`),
when one is loaded, else with a profile of the same rules the run loads (oci/apparmor.py);
SELinux labels are not applied here, and the conditions say so.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
import re
import shutil
from pathlib import Path
from typing import Any

from virtbench.host.facts import lsm
from virtbench.runtimes.oci import apparmor

TEMPLATE = Path("/usr/share/containers/seccomp.json")  # containers-common's
GET_TEMPLATE = "apt-get install golang-github-containers-common"
# Go's architecture names (the template's `arches`) and libseccomp's, by the kernel's
GO_ARCH = {
    "x86_64": "amd64",
    "aarch64": "arm64",
    "ppc64le": "ppc64le",
    "s390x": "s390x",
    "riscv64": "riscv64",
}
APPARMOR_PROFILES = Path("/sys/kernel/security/apparmor/profiles")


def _kernel(release: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.(\d+)", release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _applies(rule: dict[str, Any], caps: set[str], arch: str, kernel: tuple[int, int]) -> bool:
    """Whether one template rule holds for a container with `caps` on `arch` and
    `kernel`: every capability and one architecture of its `includes`, its minimum
    kernel, and none of its `excludes`."""
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if inc.get("arches") and arch not in inc["arches"]:
        return False
    if not set(inc.get("caps") or ()) <= caps:
        return False
    if inc.get("minKernel") and kernel < _kernel(inc["minKernel"]):
        return False
    if arch in (exc.get("arches") or ()) or caps & set(exc.get("caps") or ()):
        return False
    return not (exc.get("minKernel") and kernel >= _kernel(exc["minKernel"]))


def seccomp(
    template: dict[str, Any], caps: list[str], machine: str, release: str
) -> dict[str, Any]:
    """The OCI `linux.seccomp` section the template gives a container with `caps` on a
    `machine` (uname -m) host running kernel `release`."""
    arch, kernel, have = GO_ARCH.get(machine, machine), _kernel(release), set(caps)
    native = {"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"}.get(arch, "")
    arches: list[str] = []
    for entry in template.get("archMap") or []:
        if entry["architecture"] == native:
            arches += [entry["architecture"], *entry.get("subArchitectures", [])]
    out: dict[str, Any] = {
        "defaultAction": template["defaultAction"],
        "architectures": arches,
        "syscalls": [],
    }
    if "defaultErrnoRet" in template:
        out["defaultErrnoRet"] = template["defaultErrnoRet"]
    for rule in template.get("syscalls") or []:
        if not _applies(rule, have, arch, kernel):
            continue
        call: dict[str, Any] = {"names": list(rule["names"]), "action": rule["action"]}
        if rule.get("args"):
            call["args"] = rule["args"]
        if rule.get("errnoRet") is not None:
            call["errnoRet"] = rule["errnoRet"]
        out["syscalls"].append(call)
    return out


@functools.cache
def engine_seccomp(caps: tuple[str, ...]) -> tuple[dict[str, Any], str]:
    """(the engines' default seccomp section for `caps` on this host, where it came
    from: the template's path and the first 12 hex digits of its SHA-256)."""
    data = TEMPLATE.read_bytes()
    section = seccomp(json.loads(data), list(caps), platform.machine(), platform.release())
    return section, f"{TEMPLATE} sha256:{hashlib.sha256(data).hexdigest()[:12]}"


def problem() -> str | None:
    """Why the engines' default confinement cannot be built here (None: it can)."""
    if not TEMPLATE.is_file():
        return f"no seccomp template at {TEMPLATE} ({GET_TEMPLATE})"
    try:
        json.loads(TEMPLATE.read_text())
    except (OSError, ValueError) as exc:
        return f"the seccomp template {TEMPLATE} cannot be read: {exc}"
    return None


@functools.cache
def apparmor_profile() -> str | None:
    """The engines' AppArmor profile loaded on this host (podman's, else Docker's), or
    None: AppArmor is not enabled, or neither is loaded."""
    if lsm() != "apparmor":
        return None
    try:
        loaded = [ln.split(" (")[0] for ln in APPARMOR_PROFILES.read_text().splitlines()]
    except OSError:
        return None
    for name in sorted(loaded, reverse=True):  # the newest containers-default-x.y first
        if name.startswith("containers-default-"):
            return name
    return "docker-default" if "docker-default" in loaded else None


def apparmor_problem() -> str | None:
    """Why a bundle cannot be confined as the engines confine theirs where AppArmor is on
    and no engine's profile is loaded (None: it can, or AppArmor is off)."""
    if lsm() != "apparmor" or apparmor_profile() is not None:
        return None
    if shutil.which("apparmor_parser") is None:
        return (
            "AppArmor is on and no engine's profile is loaded: the run loads its own, "
            "which takes apparmor_parser (apt-get install apparmor)"
        )
    return None


def conditions(
    security: str, caps: tuple[str, ...], own_profile: str | None = None
) -> dict[str, str]:
    """What a bundle's confinement was, for every sample's params (`own_profile`: the
    run's own AppArmor profile it was given, oci/apparmor.py)."""
    if security == "minimal":
        return {"security": "minimal", "seccomp": "none"}
    origin = engine_seccomp(caps)[1]
    where = lsm()
    profile = apparmor_profile()
    lsm_note = (
        f"apparmor {profile}"
        if profile
        else f"apparmor vb-default ({apparmor.CONDITION})"
        if own_profile
        else f"{where} (no engine profile applied)"
        if where != "none"
        else "none"
    )
    return {"security": "engine-default", "seccomp": origin, "lsm": lsm_note}
