"""A default AppArmor profile for OCI bundles, where the host has AppArmor on and no
engine's profile is loaded to borrow.

Docker and Podman confine every container with a profile of theirs (`docker-default`,
`containers-default-*`) that they load themselves; a bare runtime applies whatever the
bundle names, and nothing where it names none. So that runc, crun and youki stay
comparable with the engines on such a host, a run loads a profile with the engines'
default rules (everything but mount, writes to most of /proc and /sys, and the kernel's
memory and security files), named after the run and the runtime (`vb-<run>-<binary>-<id>`),
gives it to each bundle, and removes it when the runtime closes; `virtbench clean`
removes one a killed run left (the runtime lists it as one of its objects).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from virtbench import naming
from virtbench.errors import VirtbenchError
from virtbench.host import proc

SECURITYFS = Path("/sys/kernel/security/apparmor")
CONDITION = "the engines' default rules, loaded by virtbench for the run"

RULES = """\
#include <tunables/global>

profile {name} flags=(attach_disconnected,mediate_deleted) {{
  #include <abstractions/base>

  network,
  capability,
  file,
  umount,
  signal (receive) peer=unconfined,
  signal (receive) peer={runtime},
  signal (send,receive) peer={name},

  deny @{{PROC}}/* w,
  deny @{{PROC}}/{{[^1-9],[^1-9][^0-9],[^1-9s][^0-9y][^0-9s],[^1-9][^0-9][^0-9][^0-9]*}}/** w,
  deny @{{PROC}}/sys/[^k]** w,
  deny @{{PROC}}/sys/kernel/{{?,??,[^s][^h][^m]**}} w,
  deny @{{PROC}}/sysrq-trigger rwklx,
  deny @{{PROC}}/kcore rwklx,

  deny mount,

  deny /sys/[^f]*/** wklx,
  deny /sys/f[^s]*/** wklx,
  deny /sys/fs/[^c]*/** wklx,
  deny /sys/fs/c[^g]*/** wklx,
  deny /sys/fs/cg[^r]*/** wklx,
  deny /sys/firmware/** rwklx,
  deny /sys/kernel/security/** rwklx,

  ptrace (trace,read,tracedby,readby) peer={name},
}}
"""


def name(run_id: str, binary: str, label: str) -> str:
    """The profile's name for the bundles of runtime `label` (whose CLI is `binary`) in run
    `run_id`: `vb-<run>-<binary>-<6 hex digits of the label>`, one per label (runsc's
    platforms are labels of one binary), its binary readable from the name (`of`)."""
    digest = hashlib.sha256(label.encode()).hexdigest()[:6]
    return naming.name(run_id, f"{binary}-{digest}")


def of(profile: str, binary: str) -> bool:
    """Whether `profile` is one a run loaded for `binary`'s bundles."""
    rid = naming.run_id_of(profile)
    if rid is None:
        return False
    rest = profile.removeprefix(naming.name(rid, ""))
    return re.fullmatch(rf"{re.escape(binary)}-[0-9a-f]{{6}}", rest) is not None


def text(profile: str, runtime: str) -> str:
    """The profile's source (pure, for tests)."""
    return RULES.format(name=profile, runtime=runtime)


def loaded(securityfs: Path | None = None) -> list[str]:
    """The names of every profile the kernel holds; one that cannot be read is an
    error, not "none"."""
    try:
        lines = ((securityfs or SECURITYFS) / "profiles").read_text().splitlines()
    except OSError as exc:
        raise VirtbenchError(f"cannot read AppArmor's loaded profiles: {exc}") from exc
    return [ln.rsplit(" (", 1)[0] for ln in lines if ln.strip()]


def load(profile: str, runtime: str, where: Path) -> None:
    """Write the profile into `where` and load it (replacing one of that name)."""
    where.mkdir(parents=True, exist_ok=True)
    source = where / f"{profile}.apparmor"
    source.write_text(text(profile, runtime))
    proc.run(["apparmor_parser", "-r", str(source)], timeout=60, what="apparmor_parser")


def unload(profile: str, securityfs: Path | None = None) -> None:
    """Remove a loaded profile (the kernel's own interface: no parser needed); one that
    is not loaded is gone already."""
    if profile not in loaded(securityfs):
        return
    try:
        ((securityfs or SECURITYFS) / ".remove").write_text(profile)
    except OSError as exc:
        raise VirtbenchError(f"cannot remove the AppArmor profile {profile}: {exc}") from exc
