"""`virtbench run`: a spec or catalog entry (with its flags, S1's spellings and `--quick`)
to samples in the store; its result tables are `show`'s (show.py)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import numpy as np
import typer
from rich.markup import escape

from virtbench import naming
from virtbench.cli.common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    app,
    comma_list,
    err,
    one_line_errors,
    open_results,
    out,
    require_root,
    typed_flag,
)
from virtbench.errors import VirtbenchError
from virtbench.paths import Paths
from virtbench.store.frame import Frame, as_frame
from virtbench.tables.flags import FLAGS

F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:  # the spec's models take a while to build: only `run` needs them
    from virtbench.spec import Spec
    from virtbench.store import RunRecord, Store


def _either(value: Any, s1_value: Any, flag: str) -> Any:
    """An option given in virtbench's spelling or S1's runner's (with underscores)."""
    if value is not None and s1_value is not None:
        raise VirtbenchError(f"{flag}: given twice (once in S1's spelling)")
    return value if value is not None else s1_value


def with_flag_options(after: str) -> Callable[[F], F]:
    """`func`'s `**flags` become one option per spec flag (tables/flags.py FLAGS), after its
    parameter `after`, so typer builds them as if declared one by one."""

    def decorate(func: F) -> F:
        params = list(inspect.signature(func, eval_str=True).parameters.values())
        at = next(i for i, p in enumerate(params) if p.name == after) + 1
        added = []
        for f in FLAGS:
            option = typer.Option(*f.names, help=f.help)
            added.append(_option(f.field, f.kind, option))
            if f.s1:  # S1's runner's spellings: hidden, merged into the flag by run_flags
                hidden = typer.Option(*f.s1, hidden=True, help=f"S1's spelling of {f.names[0]}.")
                added.append(_option(f"s1_{f.field}", f.kind, hidden))
        kept = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)  # typer passes them by name
            for p in params
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        new = [*kept[:at], *added, *kept[at:]]
        signature = inspect.Signature(new)
        func.__signature__ = signature  # type: ignore[attr-defined]  # inspect.signature reads it
        func.__annotations__ = {p.name: p.annotation for p in new}
        return func

    return decorate


def _option(name: str, kind: type, option: Any) -> inspect.Parameter:
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=None,
        annotation=Annotated[kind | None, option],
    )


def run_flags(params: dict[str, Any]) -> dict[str, Any]:
    """`virtbench run`'s spec-setting options (from its parsed parameters), by the
    spelling the user typed (errors name that one)."""
    flags: dict[str, Any] = {}
    for f in FLAGS:
        value = params[f.field]
        if f.s1:
            value = _either(value, params[f"s1_{f.field}"], f.names[0])
        typed = typed_flag(f.names[0], *f.names[1:], *f.s1)
        flags[typed] = comma_list(value, typed) if f.listed else value
    return flags


SpecArg = Annotated[
    str | None,
    typer.Argument(
        help="Spec file (.toml) or catalog entry: `virtbench catalog` lists them (the "
        "five studies s1-... to s5-..., quickstart, boot, density, ...)."
    ),
]
NameOpt = Annotated[
    str | None,
    typer.Option("--name", help="The spec or catalog entry, as S1's runner's --name uk_ng_s."),
]
QuickOpt = Annotated[
    bool,
    typer.Option(
        "--quick",
        help="The entry's quick form: every step, smaller counts and shorter durations.",
    ),
]
RuntimesOpt = Annotated[
    str | None,
    typer.Option("--runtimes", help="Comma-separated runtimes, e.g. native,runc,crun."),
]
PlanOpt = Annotated[
    bool,
    typer.Option(
        "--plan",
        help="Print what the run would start (experiments, runtimes, instances, "
        "repetitions) and how long it would take here; start nothing.",
    ),
]
ResumeOpt = Annotated[
    str | None,
    typer.Option(
        "--resume",
        help="Finish an interrupted or failed run (its id, or latest) with its own spec, "
        "skipping what it measured.",
    ),
]
LoadgenOpt = Annotated[
    str | None,
    typer.Option(
        "--loadgen",
        help="Run the serving workloads' clients on this host ([user@]host, as ssh "
        "takes it), not on the host under test.",
    ),
]
SshOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--ssh-option",
        help="An ssh -o option for --loadgen (IdentityFile=..., Port=...); repeatable.",
    ),
]
HostLabelOpt = Annotated[
    str, typer.Option("--host-label", hidden=True, help="Fleet: the host's inventory name.")
]
FleetOpt = Annotated[str, typer.Option("--fleet", hidden=True, help="Fleet: the fleet id.")]


@app.command()
@one_line_errors
@with_flag_options(after="runtimes")
def run(
    spec: SpecArg = None,
    name: NameOpt = None,
    quick: QuickOpt = False,
    runtimes: RuntimesOpt = None,
    plan_only: PlanOpt = False,
    resume: ResumeOpt = None,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
    loadgen: LoadgenOpt = None,
    ssh_option: SshOpt = None,
    host_label: HostLabelOpt = "",
    fleet: FleetOpt = "",
    **flags: Any,
) -> None:
    """Run a spec or catalog entry.

    The entries: `virtbench catalog`. Prints the run's result tables."""
    spec = _one_spec(spec, name)
    _check_fleet_labels(host_label, fleet)
    flags = run_flags(flags)
    if ssh_option and loadgen is None:
        raise VirtbenchError("--ssh-option is for --loadgen HOST: give the host too")
    lg = {"host": loadgen, "ssh_options": ssh_option or []} if loadgen is not None else None
    if resume is not None:
        if lg is not None:
            raise VirtbenchError("--resume goes on with the run's own spec: drop --loadgen")
        _refuse_beside_resume(spec, runtimes, flags, quick)
        require_root("run")
        store = open_results(results, store_url)
        record = store.run(resume)
        parsed = _stored_spec(record)
    elif spec is None:
        raise VirtbenchError("give a spec file or catalog name (e.g. quickstart), or --resume RUN")
    else:
        parsed = resolve_spec(spec, runtimes, flags, quick, lg)
        if plan_only:
            from virtbench.cli.catalog import print_plan
            from virtbench.spec.resolved import resolve

            print_plan(resolve(parsed), results)
            return
        require_root("run")
        store = open_results(results, store_url)
        record = None
    _execute(parsed, store, record, {"host": host_label, "fleet": fleet})


def _one_spec(spec: str | None, name: str | None) -> str | None:
    """The spec the user named: as the argument or as S1's `--name`, not both."""
    if name is None:
        return spec
    if spec is not None:
        raise VirtbenchError(f"give the spec once: {spec!r} or --name {name!r}")
    return name


def _check_fleet_labels(host_label: str, fleet: str) -> None:
    """`--host-label` and `--fleet` (given by `virtbench fleet run`) are well formed."""
    naming.check_host_label(host_label, "--host-label")
    if fleet and not naming.is_run_id(fleet):
        raise VirtbenchError(f"--fleet: {fleet!r} is not a fleet id (6 characters a-z0-9)")


def _refuse_beside_resume(
    spec: str | None, runtimes: str | None, flags: dict[str, Any], quick: bool
) -> None:
    """`--resume` takes nothing that would change the run's spec: name the first given."""
    given = [f for f, v in flags.items() if v is not None]
    if spec is not None or runtimes is not None or given or quick:
        named = [*given, *(["--runtimes"] if runtimes is not None else []), "--quick"]
        what = "a spec" if spec is not None else named[0]
        raise VirtbenchError(f"--resume goes on with the run's own spec: drop {what}")


def _stored_spec(record: RunRecord) -> Spec:
    """The spec a run to resume was started with, as stored with it."""
    from virtbench import spec as specmod

    return specmod.parse(record.spec, f"run {record.id}'s stored spec")


def _execute(parsed: Spec, store: Store, record: RunRecord | None, labels: dict[str, str]) -> None:
    """Start the run (or finish `record`), then print its tables and its end; exit 130
    when interrupted (what it measured is kept), 1 when a runtime measured nothing."""
    from virtbench.cli.show import print_run
    from virtbench.run import runner
    from virtbench.run.harness import Surroundings
    from virtbench.spec.resolved import resolve

    paths = Paths.from_env()
    run_id = ""

    def started(rid: str) -> None:
        nonlocal run_id
        run_id = rid
        how = "resumed" if record is not None else "started"
        out.print(f"run {rid} {how} ({parsed.name}); results in {store.location}")

    try:
        run_id, status = runner.execute(
            resolve(parsed),
            Surroundings(store, paths, out.print),
            runner.Invocation(sys.argv, started, resume=record, labels=labels),
        )
    except KeyboardInterrupt:
        err.print(
            f"[yellow]interrupted[/]: run {run_id} stopped; its samples so far are stored; "
            f"`virtbench run --resume {run_id}` finishes it"
        )
        print_run(store, run_id)
        raise typer.Exit(130) from None
    _say_end(run_id, status, unmeasured(print_run(store, run_id)))


def _say_end(run_id: str, status: str, nothing: dict[str, str]) -> None:
    """How the run ended; the runtimes that measured nothing said last, once, where they
    cannot be missed (and exit 1 for them)."""
    for runtime, why in nothing.items():
        err.print(f"error: {escape(runtime)} measured nothing in {escape(why)}", soft_wrap=True)
    out.print(f"run {run_id} {status}")
    if nothing:
        raise typer.Exit(1)


def unmeasured(samples: Frame | list[Any]) -> dict[str, str]:
    """Runtimes of a run that measured nothing of an experiment: every measurement of it
    failed (an image that never became ready, a server that never answered, a runtime
    skipped after failures in a row), whatever they measured in another: runtime -> the
    experiment and its first failure's reason. What is recorded beside a measurement,
    even a failed one (a teardown, a launch of a pile-up, the host, the image's size: the
    registry's `side` figures), measures nothing; a runtime that cannot do an experiment
    at all (its failures say "<runtime> cannot: ...", above its tables) is not counted."""
    from virtbench import metrics

    f = as_frame(samples)
    f = f.take(~f.warmup & ~f.where("experiment", "image"))
    side = np.array([metrics.lookup(m).side for m in f.labels["metric"]], dtype=bool)
    if side.size:
        f = f.take(~(side[f.codes["metric"]] & ~f.failed))
    found: dict[str, str] = {}
    for (experiment, rt), rows in f.groups("experiment", "runtime"):
        part = f.take(rows)
        if rt in found or (~part.failed).any():
            continue
        errors = [part.labels["error"][c] for c in part.codes["error"].tolist()]
        if not all(e.startswith(f"{rt} cannot: ") for e in errors):
            found[rt] = f"{experiment}: {errors[0]}"
    return found


def resolve_spec(
    spec: str,
    runtimes: str | None,
    flags: dict[str, Any],
    quick: bool = False,
    loadgen: dict[str, Any] | None = None,
) -> Spec:
    """The spec `virtbench run SPEC --runtimes ... FLAGS` runs (errors name file and field)."""
    from virtbench import spec as specmod
    from virtbench.spec import flags as spec_flags

    _, raw, where = specmod.load(spec)
    return spec_flags.with_overrides(
        raw, where, comma_list(runtimes, "--runtimes"), flags, quick=quick, loadgen=loadgen
    )
