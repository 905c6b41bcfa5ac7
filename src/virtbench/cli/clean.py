"""`virtbench clean`: remove what dead runs left on the host, and mark them crashed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from virtbench import naming
from virtbench.cli.common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    app,
    err,
    one_line_errors,
    open_results,
    out,
    require_root,
)
from virtbench.errors import StoreError, VirtbenchError
from virtbench.paths import Paths

if TYPE_CHECKING:  # imported where used: only clean needs them
    from virtbench.host import cgroups
    from virtbench.run import cleanup

CacheOpt = Annotated[
    bool, typer.Option("--cache", help="Instead: remove cached artifacts no running run uses.")
]
KeepOpt = Annotated[
    int, typer.Option("--keep", min=0, help="With --cache: keep this many most recently used.")
]


@app.command()
@one_line_errors
def clean(
    run_id: Annotated[str | None, typer.Option("--run", help="Only this run's leftovers.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be removed.")] = False,
    cache: CacheOpt = False,
    keep: KeepOpt = 0,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Remove what dead runs left behind.

    Everything labelled with a run id that is no longer running; with --cache, the
    cached artifacts instead."""
    from virtbench.host import cgroups  # every runtime's driver: only clean needs them
    from virtbench.run import cleanup

    if run_id is not None and not naming.is_run_id(run_id):
        raise VirtbenchError(f"--run: {run_id!r} is not a run id (6 characters a-z0-9)")
    require_root("clean")
    paths = Paths.from_env()
    if cache:
        _clean_cache(paths, keep, dry_run)
        return
    layout = cgroups.Layout.detect()
    problems: list[str] = []
    items = cleanup.scan(paths, run_id=run_id, layout=layout, problems=problems)
    for problem in problems:
        err.print(f"[red]error[/]: {escape(problem)}", soft_wrap=True)
    left: list[cleanup.Leftover] = []
    errors: list[str] = []
    if not items:
        out.print("nothing to clean" + (" among what could be listed" if problems else ""))
    else:
        for it in items:
            put = it.kind in ("sysctl", "ksm")  # a host setting, put back as the run found it
            verb = (
                ("would put back" if put else "would remove")
                if dry_run
                else ("putting back" if put else "removing")
            )
            out.print(f"{verb} {it}")
    if items and not dry_run:
        left, errors = _remove(items, paths, run_id, layout)
    if not dry_run:
        parents = cleanup.remove_empty_parents(layout)
        if parents:
            out.print(f"removed the empty virtbench parent cgroups ({len(parents)})")
    if not dry_run and (store_url or (results / "virtbench.sqlite").exists()):
        _mark_crashed(results, store_url, run_id)
    if problems or errors or left:
        raise typer.Exit(1)


def _remove(
    items: list[cleanup.Leftover], paths: Paths, run_id: str | None, layout: cgroups.Layout
) -> tuple[list[cleanup.Leftover], list[str]]:
    """Remove the leftovers found and say what this clean removed; returns what of the
    runs it cleaned is still there after it (said too) and the errors removing them.
    A run whose lock another clean holds is left alone, and not counted as left."""
    from virtbench.run import cleanup

    alone: list[cleanup.Leftover] = []  # a run whose lock another holds (a clean)
    errors = cleanup.remove(items, layout, left_alone=alone)
    for e in errors:
        err.print(f"[red]error[/]: {escape(e)}", soft_wrap=True)
    after = cleanup.scan(paths, run_id=run_id, layout=layout, problems=[])
    still = {(a.kind, a.name) for a in after} | {(a.kind, a.name) for a in alone}
    removed = [it for it in items if (it.kind, it.name) not in still]  # by this clean
    mine = {it.run_id for it in items} - {a.run_id for a in alone}
    left = [a for a in after if a.run_id in mine]
    if removed:
        out.print(cleanup.summarize(removed).replace("leftovers", "leftovers removed", 1))
    for it in left:
        err.print(f"[red]still there[/]: {escape(str(it))}", soft_wrap=True)
    return left, errors


def _mark_crashed(results: Path, store_url: str | None, run_id: str | None) -> None:
    """Runs the store says are running whose lock nobody holds died: say so in the store.
    On a full disk the store cannot be written; `list` and `show` still call them
    crashed (from the lock), so that is a warning, not a failure."""
    try:
        store = open_results(results, store_url)
        for r in store.runs():  # the store reads them crashed already; it holds "running"
            if r.status == "crashed" and r.finished is None and run_id in (None, r.id):
                store.finish_run(r.id, "crashed")
                out.print(f"run {r.id} marked crashed")
    except StoreError as exc:
        err.print(
            f"[yellow]warning[/]: could not mark crashed runs in the store: {exc}", soft_wrap=True
        )


def _clean_cache(paths: Paths, keep: int, dry_run: bool) -> None:
    """`clean --cache`: the cached artifacts past the `keep` most recently used that no
    run still on the host uses (running, or dead and not cleaned), removed (or listed,
    with --dry-run), with the space they held."""
    from virtbench.artifacts import cache

    used = cache.in_use(paths.runs)
    found = cache.prunable(paths.cache, keep, used)
    if not found:
        out.print(f"nothing to remove from the artifact cache ({paths.cache})")
        return
    if dry_run:
        for e in found:
            out.print(f"would remove {e.path} ({e.disk_bytes / 2**20:.1f} MiB)")
        return
    gone = cache.prune(paths.cache, keep, used)
    mib = sum(e.disk_bytes for e in gone) / 2**20
    out.print(f"removed {len(gone)} cached artifacts ({mib:.1f} MiB) from {paths.cache}")
    if len(gone) < len(found):
        left = [e.name for e in found if e not in gone]
        raise VirtbenchError(f"could not remove from the artifact cache: {', '.join(left)}")
