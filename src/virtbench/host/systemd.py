"""systemd as the host's init: whether it is, where its slices put cgroups, and the units
of virtbench's runs it holds.

Where systemd is PID 1 it owns the cgroup tree. An engine that uses its cgroup driver
(dockerd's default on such a host) puts each container in a scope under a slice it is
given: virtbench gives the instance's own, `vb-<run>-<n>.slice`, which systemd places
under `vb.slice/vb-<run>.slice/`, so that the run's instances are one slice that stopping
removes whole. Those slices are systemd's units: they are stopped through systemd
(`systemctl stop`), never removed as directories.
"""

from __future__ import annotations

import re
from pathlib import Path

from virtbench import naming
from virtbench.errors import ListingError, VirtbenchError
from virtbench.host import proc

RUN_DIR = Path("/run/systemd/system")  # exists only where systemd is the init (sd_booted)
SUFFIX = ".slice"
UNIT_RE = re.compile(rf"^{naming.PREFIX}([a-z0-9]{{{naming.RUN_ID_LEN}}})[-.]")


def booted(run_dir: Path = RUN_DIR) -> bool:
    """Whether systemd is this host's init (how sd_booted(3) tells)."""
    return run_dir.is_dir()


def slice_name(instance: str) -> str:
    """The slice an engine puts instance `instance`'s container under (`vb-x1y2z3-4`:
    `vb-x1y2z3-4.slice`)."""
    return instance + SUFFIX


def run_slice(run_id: str) -> str:
    """The slice that holds every instance slice of run `run_id` (`vb-x1y2z3.slice`)."""
    return f"{naming.PREFIX}{run_id}{SUFFIX}"


def run_of(unit: str) -> str | None:
    """The run a unit is named after (its own, or an instance's), or None."""
    m = UNIT_RE.match(unit)
    return m.group(1) if m else None


def slice_path(unit: str) -> Path:
    """Where systemd puts the slice `unit` in the cgroup tree, relative to its root: each
    dash is a level (`a-b-c.slice` is `a.slice/a-b.slice/a-b-c.slice`)."""
    parts = unit.removesuffix(SUFFIX).split("-")
    return Path(*("-".join(parts[: i + 1]) + SUFFIX for i in range(len(parts))))


def active(unit: str) -> bool:
    """Whether systemd is the init and `unit` is active (a socket that starts its service
    on the first connection, say)."""
    if not booted():
        return False
    return proc.run(["systemctl", "is-active", "--quiet", unit], check=False).returncode == 0


def run_units() -> list[str]:
    """Every loaded unit named after a run (`vb-<run>...`), active or not; a listing that
    fails is an error, not "none"."""
    res = proc.run(
        ["systemctl", "list-units", "--all", "--plain", "--no-legend", "--full", "vb-*"],
        check=False,
        timeout=30,
    )
    if res.returncode != 0:
        raise ListingError(f"systemctl list-units: {res.brief()}")
    names = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    return [n for n in names if run_of(n)]


def stop(*units: str) -> None:
    """Stop `units` (a slice: with everything in it); one that is not loaded is gone."""
    res = proc.run(["systemctl", "stop", *units], check=False, timeout=90)
    if res.returncode != 0 and "not loaded" not in res.stderr:
        raise VirtbenchError(f"systemctl stop {' '.join(units)}: {res.brief()}")


def stop_slices(slices: list[str], parent: str, roots: list[Path]) -> None:
    """Stop an engine's instance slices, then their run's slice once no other slice is
    left in it in any hierarchy (another engine of the run may still hold one)."""
    stop(*slices)
    places = [root / slice_path(parent) for root in roots]
    if not any(p.is_dir() for where in places if where.is_dir() for p in where.iterdir()):
        stop(parent)
