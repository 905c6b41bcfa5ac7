"""The artifact cache, bounded: each artifact under `<cache>/artifacts/` is stamped when a
run uses it (its directory's mtime, set by rootfs.build_rootfs), and a running run lists
the artifacts it uses in its state directory (`artifacts-in-use`), so that what is pruned
is never what a run still there (running, or dead and not cleaned yet) has mounted.

A run prunes the cache when it ends: it keeps the KEEP most recently used artifacts
(VIRTBENCH_CACHE_KEEP changes how many) and every one such a run uses.
`virtbench clean --cache [--keep N] [--dry-run]` does the same on demand; `doctor` says
how big the cache is.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from virtbench.errors import VirtbenchError

KEEP = 8  # the most recently used artifacts a prune keeps, unless VIRTBENCH_CACHE_KEEP says
IN_USE = "artifacts-in-use"  # in a running run's state directory: one path a line


@dataclass(frozen=True)
class Entry:
    """One cached artifact: its directory, its size on disk and when a run last used it."""

    path: Path
    disk_bytes: int
    used: float  # seconds since the epoch

    @property
    def name(self) -> str:
        return self.path.name


def keep_default() -> int:
    """How many artifacts a run's prune keeps: VIRTBENCH_CACHE_KEEP, else KEEP."""
    raw = os.environ.get("VIRTBENCH_CACHE_KEEP", "")
    if not raw:
        return KEEP
    if not raw.isdigit():
        raise VirtbenchError(f"VIRTBENCH_CACHE_KEEP={raw!r}: give a whole number, e.g. {KEEP}")
    return int(raw)


def entries(cache: Path) -> list[Entry]:
    """Every finished artifact in the cache, the most recently used first."""
    from virtbench.artifacts.rootfs import disk_usage

    root = cache / "artifacts"
    if not root.is_dir():
        return []
    found = [
        Entry(p, disk_usage(p)[0], p.stat().st_mtime)
        for p in root.iterdir()
        if p.is_dir() and ".tmp" not in p.name
    ]
    return sorted(found, key=lambda e: e.used, reverse=True)


def record_use(run_dir: Path, paths: Iterable[Path]) -> None:
    """Say in a running run's state directory which artifacts it uses."""
    (run_dir / IN_USE).write_text("".join(f"{p}\n" for p in paths))


def in_use(runs_dir: Path, skip: set[str] | None = None) -> set[Path]:
    """The artifacts every run whose state directory is still there said it uses (a
    running run, or a dead one whose instances `virtbench clean` has not removed yet),
    but the runs in `skip`."""
    out: set[Path] = set()
    try:
        run_dirs = [d for d in runs_dir.iterdir() if d.is_dir() and d.name not in (skip or ())]
    except FileNotFoundError:
        return out
    for run_dir in run_dirs:
        try:
            out |= {Path(line) for line in (run_dir / IN_USE).read_text().splitlines() if line}
        except FileNotFoundError:
            continue
    return out


def prunable(cache: Path, keep: int, used: set[Path]) -> list[Entry]:
    """What a prune removes: past the `keep` most recently used, those no running run
    uses."""
    return [e for e in entries(cache)[keep:] if e.path not in used]


def prune(cache: Path, keep: int, used: set[Path]) -> list[Entry]:
    """Remove `prunable`'s artifacts; returns those removed."""
    gone = []
    for e in prunable(cache, keep, used):
        shutil.rmtree(e.path, ignore_errors=True)
        if not e.path.exists():
            gone.append(e)
    return gone


def size(cache: Path) -> tuple[int, int]:
    """(artifacts, bytes on disk) in the cache."""
    found = entries(cache)
    return len(found), sum(e.disk_bytes for e in found)
