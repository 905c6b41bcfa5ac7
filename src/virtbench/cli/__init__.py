"""The `virtbench` command, one module per group of commands:

  host.py     version, doctor, setup, build
  run.py      run (a spec or catalog entry, with the flags that change it)
  show.py     list, show
  catalog.py  catalog (the entries, presets and plans)
  clean.py    clean
  fleet.py    fleet run
  results.py  compare, report, export
  site.py     site (every run as a static site)
  common.py   the options, output and error handling they share

CLI options become typed, validated values before any engine code runs; every
VirtbenchError reaches the user as one line (`error: ...`) and a non-zero exit.
"""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from virtbench.cli.common import app, closed_pipe, err, one_line, out

# the commands, registered in the order help lists them
# isort: off
from virtbench.cli import host, run, show, catalog, clean, fleet, results, report, site
# isort: on

__all__ = [
    "app",
    "catalog",
    "clean",
    "fleet",
    "host",
    "main",
    "report",
    "results",
    "run",
    "show",
    "site",
]


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
        err.print(
            f"[red]error[/]: internal error ({escape(what)}); VIRTBENCH_DEBUG=1 shows "
            "where; please report it",
            soft_wrap=True,
        )
        sys.exit(70)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        closed_pipe()
    sys.exit(code if isinstance(code, int) else 0)
