"""Commands about the host rather than a run: version, doctor, setup, build."""

from __future__ import annotations

from typing import Any

from rich.markup import escape

from virtbench import __version__
from virtbench.cli.common import app, one_line_errors, out, require_root
from virtbench.paths import Paths


@app.command()
def version() -> None:
    """Print virtbench's version."""
    out.print(__version__)


@app.command()
@one_line_errors
def doctor() -> None:
    """Say which runtimes can run here.

    For each that cannot, how to fix it; and the host's facts."""

    from virtbench import runtimes
    from virtbench.host.doctor import Check, all_checks

    checks = [*all_checks(runtimes.availability()), Check(*_cache_line())]
    rows = [(c.status, c.name, c.detail, c.fix) for c in checks]
    out.print(_doctor_table(rows, out.width))


DOCTOR_STYLE = {"ok": "green", "fail": "red", "warn": "yellow", "info": "blue"}


def _doctor_table(rows: list[tuple[str, str, str, str]], width: int) -> Any:
    """(status, check, detail, fix) as a table: status, check, then what and how to fix
    it. Where the terminal leaves that last column narrower than its longest word (a URL),
    each check's words go under its line instead, across the whole width: a word is never
    cut."""
    from rich.console import Group
    from rich.padding import Padding
    from rich.table import Table

    name_w = max(len(name) for _, name, _, _ in rows)
    words = [w for _, _, detail, fix in rows for w in f"{detail} fix: {fix}".split()]
    cells = [
        (
            f"[{DOCTOR_STYLE[status]}]{status:<4}[/]",
            escape(name),
            escape(detail) + (f"\n[dim]fix:[/] {escape(fix)}" if fix else ""),
        )
        for status, name, detail, fix in rows
    ]
    if width - (5 + 1 + name_w + 1) >= max(map(len, words)):
        t = Table(box=None, show_header=False, pad_edge=False)
        t.add_column("status", no_wrap=True)
        t.add_column("check", no_wrap=True)
        t.add_column("what, and how to fix it", overflow="fold", ratio=1)
        for row in cells:
            t.add_row(*row)
        return t
    lines: list[Any] = []
    for status, name, said in cells:
        lines += [f"{status}  {name}", Padding(said, (0, 0, 0, 6))]
    return Group(*lines)


def _cache_line() -> tuple[str, str, str]:
    """(check, status, detail) of the artifact cache: how many, how big, and what bounds
    it."""
    from virtbench.artifacts import cache

    paths = Paths.from_env()
    n, size = cache.size(paths.cache)
    keep = cache.keep_default()
    said = (
        f"{paths.cache}: {n} artifacts, {size / 2**20:.0f} MiB on disk; a run keeps the {keep} "
        "most recently used (VIRTBENCH_CACHE_KEEP); `virtbench clean --cache` removes the rest"
    )
    return ("artifact cache", "info", said)


@app.command()
@one_line_errors
def setup() -> None:
    """Prepare this host for runs.

    Idempotent; for example, it makes the hugetlb cgroup crun needs."""
    from virtbench.host.setup import prepare

    require_root("setup")
    done = prepare()
    for line in done or ["host already prepared"]:
        out.print(line)


@app.command()
@one_line_errors
def build() -> None:
    """Build the guest programs and rootfs.

    The guest programs and the minimal rootfs artifact, cached by content."""
    from virtbench.artifacts import build_minimal_rootfs

    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    out.print(f"{art.name} {art.digest[:16]} {art.disk_bytes / 1024:.0f} KiB on disk at {art.path}")
