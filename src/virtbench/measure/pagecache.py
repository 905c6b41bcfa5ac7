"""A file tree's pages out of the page cache, and proof that they are: each file written
back (fsync) and dropped (posix_fadvise DONTNEED, which leaves dirty pages), then the
bytes still resident read by an independent tool, util-linux's `fincore` (the kernel's
mincore), so that a restore said to be cold reads its files from the disk."""

from __future__ import annotations

import os
from pathlib import Path

from virtbench.errors import InstanceError
from virtbench.host import proc


def files(tree: Path) -> list[Path]:
    """Every regular file below `tree` (or `tree` itself)."""
    if tree.is_file():
        return [tree]
    return sorted(p for p in tree.rglob("*") if p.is_file() and not p.is_symlink())


def resident_bytes(paths: list[Path]) -> int:
    """Bytes of `paths` in the page cache now, as fincore reads them."""
    if not paths:
        return 0
    argv = ["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES", *map(str, paths)]
    res = proc.run(argv, check=False, timeout=120)
    if res.returncode != 0:
        raise InstanceError(f"fincore: {res.brief()}")
    return sum(int(x) for x in res.stdout.split())


def drop(tree: Path) -> tuple[int, int]:
    """Write back and drop every file below `tree` from the page cache; (bytes resident
    before, bytes still resident after, by fincore)."""
    paths = files(tree)
    before = resident_bytes(paths)
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return before, resident_bytes(paths)
