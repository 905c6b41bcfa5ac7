"""`virtbench run`: a spec or catalog entry (with its flags, S1's spellings and `--quick`)
to samples in the store, and the result tables it prints (which `show` prints too)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer
from rich.markup import escape

from virtbench import naming
from virtbench.cli_common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    _csv,
    _require_root,
    _typed,
    app,
    err,
    one_line_errors,
    open_results,
    out,
    print_table,
)
from virtbench.errors import VirtbenchError
from virtbench.frame import Frame, as_frame
from virtbench.paths import Paths
from virtbench.report.hosts import named_line
from virtbench.store import Store

if TYPE_CHECKING:  # the spec's models take a while to build: only `run` needs them
    from virtbench.spec import Spec


@app.command()
@one_line_errors
def run(
    spec: Annotated[
        str | None,
        typer.Argument(
            help="Spec file (.toml) or catalog entry: `virtbench catalog` lists them (the "
            "five studies s1-... to s5-..., quickstart, boot, density, ...)."
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="The spec or catalog entry, as S1's runner's --name uk_ng_s."),
    ] = None,
    quick: Annotated[
        bool,
        typer.Option(
            "--quick",
            help="The entry's quick form: every step, smaller counts and shorter durations.",
        ),
    ] = False,
    runtimes: Annotated[
        str | None,
        typer.Option("--runtimes", help="Comma-separated runtimes, e.g. native,runc,crun."),
    ] = None,
    runs: Annotated[int | None, typer.Option("--runs", help="Repetitions.")] = None,
    warmups: Annotated[
        int | None, typer.Option("--warmups", help="Warm-up repetitions (boot).")
    ] = None,
    benchmark_times: Annotated[
        int | None,
        typer.Option(
            "--benchmark-times",
            help="Measurements per repetition (boot); steps of background instances "
            "(scalability, as S1).",
        ),
    ] = None,
    instances_per_benchmark: Annotated[
        int | None,
        typer.Option(
            "--instances-per-benchmark",
            "--step",
            help="Instances between host-memory measurements (density); background "
            "instances added between measurements (scalability).",
        ),
    ] = None,
    instances: Annotated[
        int | None,
        typer.Option(
            "--instances",
            "--max",
            help="Instances to start (density); background instances at the end (scalability).",
        ),
    ] = None,
    workloads: Annotated[
        str | None,
        typer.Option("--workloads", help="Comma-separated workloads (boot: hello,sleep)."),
    ] = None,
    worker: Annotated[
        str | None,
        typer.Option(
            "--worker", help="What is measured (scalability: boot or a workload; isolation)."
        ),
    ] = None,
    background: Annotated[
        str | None,
        typer.Option("--background", help="Idle background instances: sleep, nginx, redis."),
    ] = None,
    attackers: Annotated[
        str | None,
        typer.Option("--attackers", help="Comma-separated attackers (isolation), e.g. cpu,fork."),
    ] = None,
    placements: Annotated[
        str | None,
        typer.Option(
            "--placements",
            help="Comma-separated placements (isolation): same-cpu, smt-sibling, other-cpu, "
            "all-other.",
        ),
    ] = None,
    target_cv: Annotated[
        float | None,
        typer.Option(
            "--target-cv",
            help="Repeat past --runs until every group's CV is at most this % (boot, "
            "throughput, isolation).",
        ),
    ] = None,
    max_runs: Annotated[
        int | None,
        typer.Option("--max-runs", help="At most this many repetitions with --target-cv."),
    ] = None,
    plan_only: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Print what the run would start (experiments, runtimes, instances, "
            "repetitions) and how long it would take here; start nothing.",
        ),
    ] = False,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Finish an interrupted or failed run (its id, or latest) with its own spec, "
            "skipping what it measured.",
        ),
    ] = None,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
    s1_benchmark_time: Annotated[
        int | None,
        typer.Option(
            "--benchmark_time",
            "--benchmark_times",
            hidden=True,
            help="S1's runner's spelling of --benchmark-times.",
        ),
    ] = None,
    s1_instances_per_benchmark: Annotated[
        int | None,
        typer.Option(
            "--instances_per_benchmark",
            hidden=True,
            help="S1's runner's spelling of --instances-per-benchmark.",
        ),
    ] = None,
    host_label: Annotated[
        str, typer.Option("--host-label", hidden=True, help="Fleet: the host's inventory name.")
    ] = "",
    fleet: Annotated[str, typer.Option("--fleet", hidden=True, help="Fleet: the fleet id.")] = "",
) -> None:
    """Run a spec or catalog entry (see `virtbench catalog`); print its result tables."""
    from virtbench import runner

    if name is not None:
        if spec is not None:
            raise VirtbenchError(f"give the spec once: {spec!r} or --name {name!r}")
        spec = name

    naming.check_host_label(host_label, "--host-label")
    if fleet and not naming.is_run_id(fleet):
        raise VirtbenchError(f"--fleet: {fleet!r} is not a fleet id (6 characters a-z0-9)")

    flags = run_flags(locals())
    if resume is not None:
        given = [f for f, v in flags.items() if v is not None]
        if spec is not None or runtimes is not None or given or quick:
            named = [*given, *(["--runtimes"] if runtimes is not None else []), "--quick"]
            what = "a spec" if spec is not None else named[0]
            raise VirtbenchError(f"--resume goes on with the run's own spec: drop {what}")
        _require_root("run")
        store = open_results(results, store_url)
        record = store.run(resume)
        from virtbench import spec as specmod

        parsed = specmod.parse(record.spec, f"run {record.id}'s stored spec")
    elif spec is None:
        raise VirtbenchError("give a spec file or catalog name (e.g. quickstart), or --resume RUN")
    else:
        parsed = resolve_spec(spec, runtimes, flags, quick)
        if plan_only:
            from virtbench.cli_catalog import print_plan

            print_plan(parsed, results)
            return
        _require_root("run")
        store = open_results(results, store_url)
        record = None
    paths = Paths.from_env()
    run_id = ""

    def started(rid: str) -> None:
        nonlocal run_id
        run_id = rid
        how = "resumed" if record is not None else "started"
        out.print(f"run {rid} {how} ({parsed.name}); results in {store.location}")

    try:
        run_id, status = runner.execute(
            parsed, store, paths, out.print, sys.argv, started, resume=record,
            labels={"host": host_label, "fleet": fleet},
        )  # fmt: skip
    except KeyboardInterrupt:
        err.print(
            f"[yellow]interrupted[/]: run {run_id} stopped; its samples so far are stored; "
            f"`virtbench run --resume {run_id}` finishes it"
        )
        _show(store, run_id)
        raise typer.Exit(130) from None
    nothing = unmeasured(_show(store, run_id))
    for runtime, why in nothing.items():  # said last, once, where it cannot be missed
        err.print(f"error: {escape(runtime)} measured nothing: {escape(why)}", soft_wrap=True)
    out.print(f"run {run_id} {status}")
    if nothing:
        raise typer.Exit(1)


def unmeasured(samples: Frame | list[Any]) -> dict[str, str]:
    """Runtimes of a run whose every measurement failed (an image that never became
    ready, a server that never answered): runtime -> the first failure's reason."""
    f = as_frame(samples)
    f = f.take(~f.warmup & ~f.where("experiment", "image"))
    bookkeeping = np.array([m.startswith("host.") or m.endswith(".reached")
                            for m in f.labels["metric"]], dtype=bool)  # fmt: skip
    failed = f.failed
    if bookkeeping.size:  # facts of the run, not of the runtime's measurements
        f = f.take(~(bookkeeping[f.codes["metric"]] & ~failed))
        failed = f.failed
    measured = set(f.take(~failed).distinct("runtime"))
    tried = f.take(failed)
    first = {rt: tried.labels["error"][tried.codes["error"][rows[0]]]
             for (rt,), rows in tried.groups("runtime")}  # fmt: skip
    return {rt: why for rt, why in first.items() if rt not in measured}


def _either(value: Any, s1_value: Any, flag: str) -> Any:
    """An option given in virtbench's spelling or S1's runner's (with underscores)."""
    if value is not None and s1_value is not None:
        raise VirtbenchError(f"{flag}: given twice (once in S1's spelling)")
    return value if value is not None else s1_value


def run_flags(p: dict[str, Any]) -> dict[str, Any]:
    """`virtbench run`'s spec-overriding options (its parsed parameters `p`), by the flag
    the user typed (errors name that one)."""
    times = _either(p["benchmark_times"], p["s1_benchmark_time"], "--benchmark-times")
    per = _either(
        p["instances_per_benchmark"], p["s1_instances_per_benchmark"], "--instances-per-benchmark"
    )
    return {
        "--runs": p["runs"],
        "--warmups": p["warmups"],
        _typed("--benchmark-times", "--benchmark_time", "--benchmark_times"): times,
        _typed("--instances-per-benchmark", "--instances_per_benchmark", "--step"): per,
        _typed("--instances", "--max"): p["instances"],
        "--workloads": _csv(p["workloads"], "--workloads"),
        "--worker": p["worker"],
        "--background": p["background"],
        "--attackers": _csv(p["attackers"], "--attackers"),
        "--placements": _csv(p["placements"], "--placements"),
        "--target-cv": p["target_cv"],
        "--max-runs": p["max_runs"],
    }


def resolve_spec(
    spec: str, runtimes: str | None, flags: dict[str, Any], quick: bool = False
) -> Spec:
    """The spec `virtbench run SPEC --runtimes ... FLAGS` runs (errors name file and field)."""
    from virtbench import spec as specmod

    _, raw, where = specmod.load(spec)
    return specmod.with_overrides(raw, where, _csv(runtimes, "--runtimes"), flags, quick)


def _show(store: Store, run_id: str, wide: bool = False) -> Frame | list[Any]:
    """Print the run's tables, events, host and artifacts; return its samples (read once)."""
    from virtbench.report.tables import bounded_note, experiment_tables
    from virtbench.report.trust import CI_NOTE, trust_notes

    if not run_id:
        return []
    record = store.run(run_id)
    samples = store.frame(run_id)
    seen: list[Any] = []
    for table in experiment_tables(record, samples, wide, seen):
        print_table(table)
    out.print(f"[dim]{CI_NOTE}[/]", soft_wrap=True)
    if bounded_note(seen):
        out.print(f"[dim]{bounded_note(seen)}[/]", soft_wrap=True)
    for _, level, message in store.events(run_id):
        if (run_id, level, message) not in store.said:  # said once: not again after a run
            out.print(f"{level}: {escape(message)}", soft_wrap=True)
    for level, message in trust_notes(samples):
        out.print(f"{level}: {escape(message)}", soft_wrap=True)
    env = record.environment
    if env:
        versions = ", ".join(f"{k} {v}" for k, v in env.get("runtimes", {}).items())
        out.print(
            f"[dim]host: {env.get('cpu_model')} x{env.get('cpu_count')}, "
            f"kernel {env.get('kernel')}, cgroup {env.get('cgroup_version')}, "
            f"kvm {env.get('kvm')}{_smt_and_mitigations(env)}; runtimes {versions}[/]",
            soft_wrap=True,
        )
    for label, named in (env or {}).get("named_runtimes", {}).items():
        out.print(f"[dim]{escape(named_line(label, named))}[/]", soft_wrap=True)
    for art in record.artifacts:
        size = f"{art['disk_bytes'] / 1024:.0f} KiB on disk"
        out.print(f"[dim]artifact {art['name']} {art['digest'][:16]}: {size}[/]")
    return samples


def _smt_and_mitigations(env: dict[str, Any]) -> str:
    """`, SMT off, mitigations auto (12 mitigated, 1 vulnerable)` for the host line."""
    text = f", SMT {env['smt_control']}" if "smt_control" in env else ""
    m = env.get("mitigations")
    if isinstance(m, dict):
        counts = m.get("counts") or {}
        shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n and k != "not affected")
        text += f", mitigations {m.get('setting')}" + (f" ({shown})" if shown else "")
    return text
