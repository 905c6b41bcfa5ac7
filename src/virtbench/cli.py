"""The `virtbench` command: doctor, setup, build, run, list, show, compare, export,
report, clean.

CLI options become typed, validated values before any engine code runs; every
VirtbenchError reaches the user as one line (`error: ...`) and a non-zero exit.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.markup import escape

from virtbench import __version__
from virtbench.cli_common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    _require_root,
    app,
    closed_pipe,
    err,
    one_line,
    one_line_errors,
    open_results,
    out,
    print_table,
    read_results,
)
from virtbench.paths import Paths


@app.command()
def version() -> None:
    """Print virtbench's version."""
    out.print(__version__)


@app.command()
@one_line_errors
def doctor() -> None:
    """Say which runtimes can run here (and how to fix those that cannot), and host facts."""
    from rich.table import Table

    from virtbench.doctor import all_checks

    style = {"ok": "green", "fail": "red", "warn": "yellow", "info": "blue"}
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column("status", no_wrap=True)
    t.add_column("check", no_wrap=True)
    t.add_column("what, and how to fix it", overflow="fold", ratio=1)
    for c in all_checks():
        fix = f"\n[dim]fix:[/] {escape(c.fix)}" if c.fix else ""
        t.add_row(f"[{style[c.status]}]{c.status}[/]", escape(c.name), escape(c.detail) + fix)
    out.print(t)


@app.command()
@one_line_errors
def setup() -> None:
    """Prepare the running host (idempotent), such as the hugetlb cgroup crun needs."""
    from virtbench.setup_host import prepare

    _require_root("setup")
    done = prepare()
    for line in done or ["host already prepared"]:
        out.print(line)


@app.command()
@one_line_errors
def build() -> None:
    """Build the guest programs and the minimal rootfs artifact (cached by content)."""
    from virtbench.artifacts import build_minimal_rootfs

    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    out.print(f"{art.name} {art.digest[:16]} {art.disk_bytes / 1024:.0f} KiB on disk at {art.path}")


# run (and the result tables it prints, which show prints too): registered here, in
# help order
from virtbench.cli_run import _show  # noqa: E402


@app.command("list")
@one_line_errors
def list_runs(results: ResultsOpt = DEFAULT_RESULTS, store_url: StoreOpt = None) -> None:
    """List the runs in the store."""
    from virtbench.report.tables import runs_table
    from virtbench.store import DB_NAME

    if not store_url and not (results / DB_NAME).is_file():  # nothing to list: create nothing
        out.print(f"no runs in {results} (no results store there yet)")
        return
    store = open_results(results, store_url)
    rows = [(r, store.count_samples(r.id)) for r in store.runs()]
    if not rows:
        out.print(f"no runs in {store.location}")
        return
    print_table(runs_table(rows))


@app.command()
@one_line_errors
def show(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id (see `virtbench list`), or latest.")
    ],
    wide: Annotated[
        bool, typer.Option("--wide", help="Also mean, SD, min-max and outliers.")
    ] = False,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Show one run: per metric and runtime, median with 95% CI, CV and n."""
    store = read_results(results, store_url)
    record = store.run(run_id)
    out.print(f"run {record.id} ({record.name}): {record.status}")
    _show(store, record.id, wide)


# catalog, clean, compare, report, export: registered after the commands above, so help
# lists them in order
from virtbench import cli_catalog, cli_clean, cli_fleet, cli_results  # noqa: E402

__all__ = ["app", "cli_catalog", "cli_clean", "cli_fleet", "cli_results", "main"]


def main() -> None:
    """The console script: every error is one line. Click's usage errors (a bad option
    value, an unknown option) lose their box; an unexpected exception is named in one line
    (VIRTBENCH_DEBUG=1 shows its traceback) rather than a traceback for a user to read."""
    import os

    try:
        code = app(standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors: a bad value, no such option
        ctx = getattr(exc, "ctx", None)
        if type(exc).__name__ == "NoArgsIsHelpError" and ctx is not None:
            out.print(ctx.get_help())  # plain `virtbench`: the help, as before
            sys.exit(exc.exit_code)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        msg = " ".join(exc.format_message().split())
        err.print(f"[red]error[/]: {escape(one_line(msg))}{hint}", soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Abort:  # end of input at a prompt
        err.print("[yellow]aborted[/]")
        sys.exit(1)
    except BrokenPipeError:  # the reader left (`... | head`): end as a writer killed by SIGPIPE
        closed_pipe()
    except Exception as exc:
        if os.environ.get("VIRTBENCH_DEBUG"):
            raise
        what = one_line(" ".join(f"{type(exc).__name__}: {exc}".split()))
        err.print(f"[red]error[/]: internal error ({escape(what)}); VIRTBENCH_DEBUG=1 shows "
                  "where; please report it", soft_wrap=True)  # fmt: skip
        sys.exit(70)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        closed_pipe()
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
