"""`virtbench site`: every run of a store as a static site (virtbench.site)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from virtbench.cli.common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    app,
    err,
    one_line_errors,
    read_results,
)
from virtbench.errors import VirtbenchError


@app.command()
@one_line_errors
def site(
    directory: Annotated[
        Path | None,
        typer.Argument(metavar="DIR", help="Directory of the site (new, empty, or built before)."),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", help="Runs worked out at once (default: one per CPU)."),
    ] = None,
    show_schema: Annotated[
        bool, typer.Option("--schema", help="Print the JSON Schema of the site's JSON files.")
    ] = False,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Build a static site of every run in the store.

    An index of testbeds, each testbed's leaderboards, each entry's trends over its runs,
    every run's report, and JSON beside every page. A second build writes only what
    changed. It reads from file:// and from any static host."""
    from virtbench import site as sitemod
    from virtbench.site.schema import schema_text

    if show_schema:
        sys.stdout.write(schema_text())
        return
    if directory is None:
        raise VirtbenchError("site: give the directory to build it in: `virtbench site public`")
    n = jobs if jobs is not None else len(os.sched_getaffinity(0))
    if n < 1:
        raise VirtbenchError(f"--jobs: {n} is not a number of processes; give 1 or more")
    store = read_results(results, store_url)
    start = time.monotonic()
    built = sitemod.build(store, store_url or results, directory, jobs=n)
    took = time.monotonic() - start
    err.print(_said(built, directory, took))
    if built.running:
        err.print(f"left out: {built.running} run(s) still running")
    err.print(f"open {directory / 'index.html'}")


def _said(built: Any, directory: Path, took: float) -> str:
    """`site: 3 runs on 1 testbed in site: made 1 run's files, wrote 9 files, ...`"""
    k = len(built.made)
    whose = "1 run's" if k == 1 else f"{k} runs'"
    runs = f"{built.runs} run{'s' * (built.runs != 1)}"
    beds = f"{built.testbeds} testbed{'s' * (built.testbeds != 1)}"
    return (
        f"site: {runs} on {beds} in {directory}: made {whose} files, wrote "
        f"{len(built.written)} files, removed {len(built.removed)} ({took:.1f} s)"
    )
