"""The `virtbench` command: doctor, setup, build, run, list, show, compare, export,
report, clean.

CLI options become typed, validated values before any engine code runs; every
VirtbenchError reaches the user as one line (`error: ...`) and a non-zero exit.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from virtbench import __version__, cgroups, cleanup, naming
from virtbench import spec as specmod
from virtbench.errors import VirtbenchError
from virtbench.paths import Paths
from virtbench.store import Store

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Compare virtualization runtimes on this host: boot time, memory, throughput.",
)
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])
ResultsOpt = Annotated[
    Path,
    typer.Option("--results", help="Results directory (SQLite store).", envvar="VIRTBENCH_RESULTS"),
]
DEFAULT_RESULTS = Path("results")


def one_line_errors(fn: F) -> F:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except VirtbenchError as exc:
            err.print(f"[red]error[/]: {escape(str(exc))}", soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]


def _csv(value: str | None, flag: str) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise VirtbenchError(f"{flag}: give a comma-separated list, e.g. native,crun")
    return items


def _typed(name: str, alias: str) -> str:
    """Which of an option's two names the user typed, so an error names that one."""
    return alias if any(a == alias or a.startswith(alias + "=") for a in sys.argv) else name


def _require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise VirtbenchError(f"{what} needs root (cgroups, runtimes, networks): run it with sudo")


@app.command()
def version() -> None:
    """Print virtbench's version."""
    out.print(__version__)


@app.command()
@one_line_errors
def doctor() -> None:
    """Say which runtimes can run here (and how to fix those that cannot), and host facts."""
    from virtbench.doctor import all_checks

    style = {"ok": "green", "fail": "red", "warn": "yellow", "info": "blue"}
    for c in all_checks():
        fix = f"  [dim]fix:[/] {c.fix}" if c.fix else ""
        out.print(f"[{style[c.status]}]{c.status:4}[/] {c.name:18} {c.detail}{fix}", soft_wrap=True)


@app.command()
@one_line_errors
def setup() -> None:
    """Prepare the running host (idempotent): e.g. mount the hugetlb cgroup crun needs."""
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


@app.command()
@one_line_errors
def run(
    spec: Annotated[
        str, typer.Argument(help="Spec file (.toml) or catalog name (quickstart, boot, density).")
    ],
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
    results: ResultsOpt = DEFAULT_RESULTS,
) -> None:
    """Run an experiment spec and print its result tables."""
    from virtbench import runner

    _, raw, where = specmod.load(spec)
    flags = {
        "--runs": runs,
        "--warmups": warmups,
        "--benchmark-times": benchmark_times,
        _typed("--instances-per-benchmark", "--step"): instances_per_benchmark,
        _typed("--instances", "--max"): instances,
        "--workloads": _csv(workloads, "--workloads"),
        "--worker": worker,
        "--background": background,
        "--attackers": _csv(attackers, "--attackers"),
        "--placements": _csv(placements, "--placements"),
        "--target-cv": target_cv,
        "--max-runs": max_runs,
    }
    parsed = specmod.with_overrides(raw, where, _csv(runtimes, "--runtimes"), flags)
    _require_root("run")
    store = Store(results)
    paths = Paths.from_env()
    run_id = ""

    def started(rid: str) -> None:
        nonlocal run_id
        run_id = rid
        out.print(f"run {rid} started ({parsed.name}); results in {store.path}")

    try:
        run_id, status = runner.execute(parsed, store, paths, out.print, sys.argv, started)
    except KeyboardInterrupt:
        err.print(f"[yellow]interrupted[/]: run {run_id} stopped; its samples so far are stored")
        _show(store, run_id)
        raise typer.Exit(130) from None
    _show(store, run_id)
    out.print(f"run {run_id} {status}")


def _show(store: Store, run_id: str, wide: bool = False) -> None:
    from virtbench.report.tables import experiment_tables

    if not run_id:
        return
    record = store.run(run_id)
    samples = store.samples(run_id)
    for table in experiment_tables(record, samples, wide):
        out.print(table)
    for _, level, message in store.events(run_id):
        out.print(f"{level}: {escape(message)}", soft_wrap=True)
    env = record.environment
    if env:
        versions = ", ".join(f"{k} {v}" for k, v in env.get("runtimes", {}).items())
        out.print(
            f"[dim]host: {env.get('cpu_model')} x{env.get('cpu_count')}, "
            f"kernel {env.get('kernel')}, cgroup {env.get('cgroup_version')}, "
            f"kvm {env.get('kvm')}; runtimes {versions}[/]",
            soft_wrap=True,
        )
    for art in record.artifacts:
        size = f"{art['disk_bytes'] / 1024:.0f} KiB on disk"
        out.print(f"[dim]artifact {art['name']} {art['digest'][:16]}: {size}[/]")


@app.command("list")
@one_line_errors
def list_runs(results: ResultsOpt = DEFAULT_RESULTS) -> None:
    """List the runs in the store."""
    from virtbench.report.tables import runs_table

    store = Store(results)
    rows = [(r, store.count_samples(r.id)) for r in store.runs()]
    if not rows:
        out.print(f"no runs in {store.path}")
        return
    out.print(runs_table(rows))


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
) -> None:
    """Show one run: per metric and runtime, median with 95% CI, CV and n."""
    store = Store(results)
    record = store.run(run_id)
    out.print(f"run {record.id} ({record.name}): {record.status}")
    _show(store, record.id, wide)


def _side(store: Store, run_id: str, runtime: str | None) -> list:
    """A run's samples, or those of one of its runtimes (named by --runtimes)."""
    samples = store.samples(store.run(run_id).id)
    if runtime is None:
        return samples
    have = sorted({s.runtime for s in samples})
    if runtime not in have:
        raise VirtbenchError(
            f"--runtimes: run {run_id} has no {runtime!r} samples (it has: {', '.join(have)})"
        )
    return [s for s in samples if s.runtime == runtime]


@app.command()
@one_line_errors
def compare(
    run_ids: Annotated[
        list[str],
        typer.Argument(metavar="A [B]", help="Two runs, or one run with --runtimes a,b."),
    ],
    runtimes: Annotated[
        str | None,
        typer.Option(
            "--runtimes",
            help="a,b: runtime a (of run A) against runtime b (of run B, or of the same run).",
        ),
    ] = None,
    min_effect: Annotated[
        float, typer.Option("--min-effect", help="Smallest change that counts, in %.")
    ] = 5.0,
    alpha: Annotated[
        float, typer.Option("--alpha", help="Significance level (after Holm's correction).")
    ] = 0.05,
    metric: Annotated[
        str | None,
        typer.Option("--metric", help="Only these metrics: comma-separated glob patterns."),
    ] = None,
    fail_on: Annotated[
        str,
        typer.Option("--fail-on", help="Exit 1 when a verdict is: worse | change | never."),
    ] = "worse",
    results: ResultsOpt = DEFAULT_RESULTS,
) -> None:
    """Is B slower than A? Per metric: medians, change, permutation p, verdict. Exit 1 on a
    regression (worse, failed, missing), 3 when too few samples decide nothing, 2 on bad
    input (for CI jobs)."""
    from virtbench.report import compare as cmp

    if len(run_ids) > 2:
        raise VirtbenchError("compare: give one run (with --runtimes a,b) or two runs")
    if not 0 < alpha < 1:
        raise VirtbenchError(f"--alpha: {alpha:g} must be between 0 and 1, e.g. 0.05")
    if min_effect < 0:
        raise VirtbenchError(f"--min-effect: {min_effect:g} must be a percentage >= 0, e.g. 5")
    if fail_on not in ("worse", "change", "never"):
        raise VirtbenchError(f"--fail-on: {fail_on!r} is not one of worse, change, never")
    pair = _csv(runtimes, "--runtimes")
    n_pair = len(pair or [])
    if (pair is not None and n_pair not in (1, 2)) or (len(run_ids) == 1 and n_pair != 2):
        raise VirtbenchError("--runtimes: give two runtimes a,b (one is enough with two runs)")
    store = Store(results)
    id_a, id_b = store.run(run_ids[0]).id, store.run(run_ids[-1]).id
    rt_a, rt_b = (pair[0], pair[-1]) if pair else (None, None)
    a, b = _side(store, id_a, rt_a), _side(store, id_b, rt_b)
    rows = cmp.compare(a, b, with_runtime=pair is None, alpha=alpha,
                       min_effect=min_effect / 100, metrics=_csv(metric, "--metric"))  # fmt: skip
    name_a = f"{id_a}" + (f" {rt_a}" if rt_a else "")
    name_b = f"{id_b}" + (f" {rt_b}" if rt_b else "")
    title = f"B against A (min effect {min_effect:g}%, alpha {alpha:g})"
    out.print(cmp.verdict_table(title, rows, name_a, name_b))
    n = cmp.counts(rows)
    always = ("worse", "better", "no change", "too few")
    out.print(", ".join(f"{v} {k}" for k, v in n.items() if v or k in always))
    bad = sum(n[k] for k in cmp.REGRESSIONS) + (n["better"] if fail_on == "change" else 0)
    if bad and fail_on != "never":
        raise typer.Exit(1)
    if n["too few"] == len(rows) and fail_on != "never":
        err.print("[yellow]inconclusive[/]: too few samples to decide anything; add --runs")
        raise typer.Exit(3)


def _bands(value: str | None, flag: str, default: tuple[float, ...]) -> tuple[float, ...]:
    """Four DESMET thresholds in %, e.g. 60,70,80,90."""
    if value is None:
        return default
    try:
        bands = tuple(float(v) for v in _csv(value, flag) or [])
    except ValueError:
        bands = ()
    if len(bands) != 4 or any(b <= 0 for b in bands):
        example = ",".join(f"{b:g}" for b in default)
        raise VirtbenchError(f"{flag}: give four percentages, e.g. {example}")
    return bands


@app.command()
@one_line_errors
def report(
    run_ids: Annotated[list[str], typer.Argument(metavar="RUN...", help="Run ids, or latest.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")] = Path(
        "report.html"
    ),
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Runtime the scores are against (default: native)."),
    ] = None,
    boot_baseline: Annotated[
        str | None,
        typer.Option("--boot-baseline", help="Runtime boot is scored against (S5: a VM)."),
    ] = None,
    bands_higher: Annotated[
        str | None,
        typer.Option("--bands-higher", help="Score bands, % of baseline (default 60,70,80,90)."),
    ] = None,
    bands_lower: Annotated[
        str | None,
        typer.Option("--bands-lower", help="Latency-like bands, % (default 140,130,120,110)."),
    ] = None,
    bands_boot: Annotated[
        str | None, typer.Option("--bands-boot", help="Boot bands, % (default 40,30,20,10).")
    ] = None,
    cv_warn: Annotated[
        float, typer.Option("--cv-warn", help="Warn about groups with a CV above this %.")
    ] = 10.0,
    plots: Annotated[
        Path | None, typer.Option("--plots", help="Also write every plot as PNG and SVG here.")
    ] = None,
    global_test: Annotated[
        str,
        typer.Option(
            "--global-test", help="Across runtimes: kruskal (+ Dunn) or anova (+ Tukey HSD)."
        ),
    ] = "kruskal",
    results: ResultsOpt = DEFAULT_RESULTS,
) -> None:
    """Write one self-contained HTML report (tables, plots, warnings, scores) of runs."""
    from virtbench.report import html
    from virtbench.stats import DESMET_BANDS

    if global_test not in ("kruskal", "anova"):
        raise VirtbenchError(f"--global-test: {global_test!r} is not one of kruskal, anova")
    if cv_warn <= 0:
        raise VirtbenchError(f"--cv-warn: {cv_warn:g} must be a percentage > 0, e.g. 10")
    bands = {
        "higher": _bands(bands_higher, "--bands-higher", DESMET_BANDS["higher"]),
        "lower": _bands(bands_lower, "--bands-lower", DESMET_BANDS["lower"]),
        "boot": _bands(bands_boot, "--bands-boot", DESMET_BANDS["boot"]),
    }
    store = Store(results)
    run_ids = [store.run(rid).id for rid in run_ids]  # "latest" -> its id; unknown: error
    have = {s.runtime for rid in run_ids for s in store.samples(rid)}
    for flag, value in (("--baseline", baseline), ("--boot-baseline", boot_baseline)):
        if value is not None and value not in have:
            raise VirtbenchError(
                f"{flag}: no {value!r} samples in these runs (they have: {', '.join(sorted(have))})"
            )
    opts = html.Options(baseline=baseline, bands=bands, cv_warn=cv_warn / 100, plots_dir=plots,
                        global_test=global_test, boot_baseline=boot_baseline)  # fmt: skip
    text = html.render(store, run_ids, opts)
    try:
        output.write_text(text)
    except OSError as exc:
        raise VirtbenchError(f"-o {output}: cannot write ({exc.strerror})") from None
    out.print(f"report of {', '.join(run_ids)} written to {output} ({len(text) / 1024:.0f} KiB)")


@app.command()
@one_line_errors
def export(
    run_id: Annotated[
        str | None, typer.Argument(metavar="RUN", help="Run id (see `virtbench list`), or latest.")
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="ndjson or csv.")] = "ndjson",
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="File to write (default: stdout).")
    ] = None,
    show_schema: Annotated[
        bool, typer.Option("--schema", help="Print the JSON Schema of the export instead.")
    ] = False,
    results: ResultsOpt = DEFAULT_RESULTS,
) -> None:
    """Export a run's samples (and, as NDJSON, the run and its events)."""
    from virtbench import export as ex

    if show_schema:
        sys.stdout.write(ex.schema_text())
        return
    if run_id is None:
        raise VirtbenchError("export: give a run id (see `virtbench list`), or --schema")
    if fmt not in ex.FORMATS:
        raise VirtbenchError(f"--format: {fmt!r} is not one of {', '.join(ex.FORMATS)}")
    store = Store(results)
    store.run(run_id)  # unknown run: one line, before any file is created
    write = ex.write_ndjson if fmt == "ndjson" else ex.write_csv
    if output is None:
        write(store, run_id, sys.stdout)
        return
    try:
        with open(output, "w", newline="") as fh:
            n = write(store, run_id, fh)
    except OSError as exc:
        raise VirtbenchError(f"-o {output}: cannot write ({exc.strerror})") from None
    err.print(f"{n} {'lines' if fmt == 'ndjson' else 'rows'} written to {output}")


@app.command()
@one_line_errors
def clean(
    run_id: Annotated[str | None, typer.Option("--run", help="Only this run's leftovers.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be removed.")] = False,
    results: ResultsOpt = DEFAULT_RESULTS,
) -> None:
    """Remove everything labelled with a run id that is no longer running."""
    if run_id is not None and not naming.is_run_id(run_id):
        raise VirtbenchError(f"--run: {run_id!r} is not a run id (6 characters a-z0-9)")
    _require_root("clean")
    paths = Paths.from_env()
    layout = cgroups.Layout.detect()
    items = cleanup.scan(paths, run_id=run_id, layout=layout)
    if not items:
        out.print("nothing to clean")
    else:
        for it in items:
            out.print(f"{'would remove' if dry_run else 'removing'} {it}")
        if not dry_run:
            errors = cleanup.remove(items, layout)
            for e in errors:
                err.print(f"[red]error[/]: {escape(e)}")
            if errors:
                raise typer.Exit(1)
            out.print(cleanup.summarize(items).replace("leftovers", "leftovers removed", 1))
    if not dry_run and (results / "virtbench.sqlite").exists():
        store = Store(results)
        live = cleanup.live_runs(paths)
        for r in store.runs():
            if r.status == "running" and r.id not in live and run_id in (None, r.id):
                store.finish_run(r.id, "crashed")
                out.print(f"run {r.id} marked crashed")


def main() -> None:
    app()


if __name__ == "__main__":
    main()
