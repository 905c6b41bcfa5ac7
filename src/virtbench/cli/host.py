"""Commands about the host rather than a run: version, doctor, setup, build."""

from __future__ import annotations

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
    from rich.table import Table

    from virtbench import runtimes
    from virtbench.host.doctor import Check, all_checks

    style = {"ok": "green", "fail": "red", "warn": "yellow", "info": "blue"}
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column("status", no_wrap=True)
    t.add_column("check", no_wrap=True)
    t.add_column("what, and how to fix it", overflow="fold", ratio=1)
    for c in [*all_checks(runtimes.availability()), Check(*_cache_line())]:
        fix = f"\n[dim]fix:[/] {escape(c.fix)}" if c.fix else ""
        t.add_row(f"[{style[c.status]}]{c.status}[/]", escape(c.name), escape(c.detail) + fix)
    out.print(t)


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
