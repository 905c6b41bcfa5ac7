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

import functools
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


@functools.cache
def version() -> int:
    """systemd's version (252 on Debian 12, 257 on 13); 0 where it cannot be told."""
    try:
        res = _systemctl("--version", timeout=10)
    except VirtbenchError:
        return 0
    m = re.match(r"systemd (\d+)", res.stdout)
    return int(m.group(1)) if m else 0


def _systemctl(*args: str, timeout: float = 30) -> proc.Result:
    """systemctl with `args`; one that does not answer in time is an error, as one that
    fails to run."""
    return proc.run(["systemctl", *args], check=False, timeout=timeout)


def active(unit: str) -> bool:
    """Whether systemd is the init and says `unit` is active (False where it cannot say)."""
    if not booted():
        return False
    try:
        return _systemctl("is-active", "--quiet", unit, timeout=10).returncode == 0
    except VirtbenchError:
        return False


def run_units() -> list[str]:
    """Every slice named after a run (`vb-<run>.slice`, `vb-<run>-<n>.slice`: the only
    units virtbench has systemd make) that is active, failed or has a job pending (one
    stopped already is gone: systemd unloads it); a listing that fails is an error, not
    "none"."""
    try:
        res = _systemctl("list-units", "--plain", "--no-legend", "--full", "vb-*.slice")
    except VirtbenchError as exc:
        raise ListingError(f"systemctl list-units: {exc}") from exc
    if res.returncode != 0:
        raise ListingError(f"systemctl list-units: {res.brief()}")
    names = [line.split()[0] for line in res.stdout.splitlines() if line.strip()]
    return [n for n in names if n.endswith(SUFFIX) and run_of(n)]


def stop(unit: str) -> None:
    """Stop `unit` (a slice: with everything in it); one that is not loaded is gone."""
    res = _systemctl("stop", unit, timeout=90)
    if res.returncode != 0 and "not loaded" not in res.stderr:
        raise VirtbenchError(f"systemctl stop {unit}: {res.brief()}")


def stop_slices(slices: list[str], parent: str, roots: list[Path]) -> None:
    """Stop an engine's instance slices: the run's slice whole (one call) where no other
    engine of the run holds a slice in it, else each of them."""
    places = [root / slice_path(parent) for root in roots]
    present = {  # the slices in it: its child cgroups, not its interface files
        p.name for where in places if where.is_dir() for p in where.iterdir() if p.is_dir()
    }
    if present <= set(slices):
        stop(parent)
        return
    for unit in slices:
        stop(unit)
