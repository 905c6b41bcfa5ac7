"""What every `virtbench` command shares: the Typer app, the consoles, one-line errors
and the options several commands take."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from virtbench.cli import help_words
from virtbench.errors import VirtbenchError

if TYPE_CHECKING:
    from rich.table import Table

    from virtbench.store import Store

help_words.install()
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: wrapped to the terminal, no type column per flag
    help="Compare virtualization runtimes on this host: boot time, memory, throughput.",
)
# no emoji codes: a name with colons (qemu:q35:tcg) is printed as written
out = Console(highlight=False, emoji=False)
err = Console(stderr=True, highlight=False, emoji=False)


def _print_version(given: bool) -> None:
    """`--version`: `virtbench <version>`, and the end (eager: before any command)."""
    if given:
        from virtbench import __version__

        out.print(f"virtbench {__version__}", markup=False)
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print virtbench's version and exit.",
        ),
    ] = False,
    results: Annotated[
        Path | None,
        typer.Option("--results", metavar="DIR", help="Results directory, for any command."),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option("--store", metavar="URL", help="A shared results database, for any command."),
    ] = None,
) -> None:
    """The options given before a command (`virtbench --version`, `virtbench --results DIR
    list`): --results and --store here are the command's own defaults (as their
    environment variables are), which the same option after the command overrides."""
    if results is not None:
        os.environ["VIRTBENCH_RESULTS"] = str(results)
    if store is not None:
        os.environ["VIRTBENCH_STORE"] = store


P = ParamSpec("P")
R = TypeVar("R")
ResultsOpt = Annotated[
    Path,
    typer.Option(
        "--results",
        metavar="DIR",
        help="Results directory (SQLite store).",
        envvar="VIRTBENCH_RESULTS",
    ),
]
DEFAULT_RESULTS = Path("results")
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="URL",
        help="A shared results database (postgresql://user@host/db) instead of --results.",
        envvar="VIRTBENCH_STORE",
    ),
]


def open_results(results: Path, store: str | None) -> Store:
    """The store a command reads or writes: `--store URL` if given, else `--results DIR`."""
    from virtbench.host import state
    from virtbench.store import open_store

    return open_store(store or results, alive=state.is_alive)


def read_results(results: Path, store: str | None) -> Store:
    """The store a reading command reads (list, show, compare, report, export): as
    `open_results`, but a results directory without a store is an error, never a new,
    empty store left behind."""
    from virtbench.store import DB_NAME

    if not store and not (results / DB_NAME).is_file():
        raise VirtbenchError(
            f"no results store in {results.absolute()} (no {DB_NAME} there): point at the "
            "directory `virtbench run` wrote with --results DIR, or at a shared one with "
            "--store URL"
        )
    return open_results(results, store)


def print_table(t: Table) -> None:
    """A table as it is where it fits the terminal, else stacked (never a cut value); its
    caption under it across the terminal's width, not wrapped to the table's."""
    from rich.table import Table

    from virtbench.report.narrow import fit

    shown = fit(t, out)
    if not isinstance(shown, Table) or not shown.caption:  # stacked: a group of its rows
        out.print(shown)
        return
    caption = shown.caption
    shown.caption = None
    try:
        out.print(shown)
    finally:
        shown.caption = caption
    out.print(caption, style="table.caption")


def one_line(text: str) -> str:
    """`text` as one printable line: control characters and everything else Python counts
    as a line break (NEL, U+2028, ...) that user input put in an error are escaped."""
    return "".join(
        c.encode("unicode_escape").decode() if not c.isprintable() and c != " " else c for c in text
    )


def one_line_errors(fn: Callable[P, R]) -> Callable[P, R]:
    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except VirtbenchError as exc:
            err.print(f"[red]error[/]: {escape(one_line(str(exc)))}", soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except BrokenPipeError:  # the reader left (`... | head`): before click says 1
            closed_pipe()

    return wrapper


def closed_pipe() -> NoReturn:
    """End quietly with the status a shell gives a writer SIGPIPE ended (128 + 13), as
    `cat` and `seq` end; what is left unflushed goes nowhere rather than raise at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    raise SystemExit(141)


def comma_list(value: str | None, flag: str) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise VirtbenchError(f"{flag}: give a comma-separated list, e.g. native,crun")
    return items


def typed_flag(name: str, *aliases: str) -> str:
    """Which of an option's names the user typed, so an error names that one."""
    for alias in aliases:
        if any(a == alias or a.startswith(alias + "=") for a in sys.argv):
            return alias
    return name


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise VirtbenchError(f"{what} needs root (cgroups, runtimes, networks): run it with sudo")


out.on_broken_pipe = closed_pipe  # type: ignore[method-assign]  # rich would exit 1
