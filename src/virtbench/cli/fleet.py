"""`virtbench fleet run`: one experiment on every host of an Ansible inventory (see
virtbench/fleet/__init__.py), results merged into the local store (or written by every
host to one PostgreSQL database with --store)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from typer.core import TyperGroup

from virtbench.cli.common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    app,
    err,
    one_line_errors,
    open_results,
    out,
    print_table,
)
from virtbench.errors import VirtbenchError
from virtbench.paths import Paths

if TYPE_CHECKING:  # imported where used: only fleet run needs it
    from virtbench import fleet

fleet_app = typer.Typer(no_args_is_help=True, help="Run on many hosts at once (Ansible).")
app.add_typer(fleet_app, name="fleet")

# `virtbench run` flags the fleet sets itself on every host
OWN_FLAGS = ("--runtimes", "--results", "--store", "--resume", "--host-label", "--fleet")


@fleet_app.command(
    "run", context_settings={"allow_extra_args": True, "ignore_unknown_options": True}
)
@one_line_errors
def fleet_run(
    ctx: typer.Context,
    spec: Annotated[str, typer.Argument(help="Spec file (.toml) or catalog name.")],
    inventory: Annotated[
        Path, typer.Option("--inventory", "-i", help="Ansible inventory of the hosts.")
    ],
    runtimes: Annotated[
        str | None,
        typer.Option("--runtimes", help="Comma-separated runtimes, e.g. native,crun."),
    ] = None,
    shard: Annotated[
        str,
        typer.Option("--shard", help="none: the whole spec on every host; runtime: share them."),
    ] = "none",
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Run SPEC on every host; merge results.

    Install virtbench on every host (make setup), run SPEC there with the other flags
    of `virtbench run` (--runs, --workloads, ...), and merge each host's results here with
    the host as a label. Exit 1 when a host failed or was unreachable (the others' results
    are kept)."""
    from virtbench import fleet

    plan = _plan(spec, list(ctx.args), runtimes, shard)
    store = open_results(results, store_url)
    results_to = fleet.Results(store, store_url)
    fid, outcomes, merged = fleet.run(plan, inventory, results_to, Paths.from_env(), out.print)
    t = Table(title=f"fleet {fid}", title_justify="left")
    for col in ("host", "status", "runs", "samples", "why"):
        t.add_column(col)
    for host, o in outcomes.items():
        ids = merged.get(host, [])
        n = sum(store.count_samples(r) for r in ids)
        style = {"ok": "green", "failed": "red", "unreachable": "red"}[o.status]
        t.add_row(host, f"[{style}]{o.status}[/]", ",".join(ids), str(n), o.message)
    print_table(t)
    bad = [h for h, o in outcomes.items() if o.status != "ok"]
    out.print(
        f"fleet {fid}: {len(outcomes) - len(bad)} of {len(outcomes)} hosts completed; "
        f"`virtbench report {fid}` shows them"
    )
    if bad:
        err.print(f"[red]error[/]: fleet {fid}: {', '.join(bad)} did not complete (see above)")
        raise typer.Exit(1)


def _plan(spec: str, args: list[str], runtimes: str | None, shard: str) -> fleet.Plan:
    """What every host is to run: SPEC with the other flags of `virtbench run` (`args`),
    checked here first as `virtbench run` will parse them on the hosts, so bad ones fail
    before any host is reached; the flags the fleet sets itself are refused."""
    from virtbench import fleet
    from virtbench.cli import run as cli_run

    if shard not in ("none", "runtime"):
        raise VirtbenchError(f"--shard: {shard!r} is not one of none, runtime")
    for a in args:
        if a.split("=", 1)[0] in OWN_FLAGS:
            raise VirtbenchError(f"fleet run: {a.split('=', 1)[0]} is set by the fleet; drop it")
    # The flags as `virtbench run` will parse them on the hosts: bad ones fail here first.
    group = typer.main.get_command(app)
    assert isinstance(group, TyperGroup)  # the app has commands: a group of them
    run_cmd = group.commands["run"]
    params = run_cmd.make_context("virtbench run", [spec, *args]).params
    parsed = cli_run.resolve_spec(spec, runtimes, cli_run.run_flags(params), params["quick"])
    plan = fleet.Plan(
        spec=spec, spec_name=parsed.name, args=args, runtimes=list(parsed.runtimes), shard=shard
    )
    if runtimes is not None and shard == "none":
        plan.args = [*args, "--runtimes", ",".join(parsed.runtimes)]
    return plan
