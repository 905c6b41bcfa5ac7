"""The commands that read the store: compare, report, export."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from virtbench.cli.common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    app,
    comma_list,
    err,
    one_line_errors,
    out,
    print_table,
    read_results,
)
from virtbench.errors import VirtbenchError
from virtbench.store import Store
from virtbench.store.frame import Frame


def resolve(store: Store, ids: list[str]) -> list[str]:
    """Run ids for what the user named: runs (or latest), or fleet ids (`virtbench fleet
    run` prints one), which stand for every run of that fleet, ordered by host."""
    out: list[str] = []
    runs = store.runs()
    for given in ids:
        fleet = sorted((r for r in runs if r.fleet == given), key=lambda r: r.host)
        found = [r.id for r in fleet] if fleet else [store.run(given).id]
        out += [rid for rid in found if rid not in out]
    return out


def _fleet_host(store: Store, fleet: str, host: str) -> str:
    """The run of `host` in `fleet` (for compare --hosts)."""
    runs = [r for r in store.runs() if r.fleet == fleet]
    if not runs:
        raise VirtbenchError(f"--hosts: {fleet!r} is not a fleet id in {store.location}")
    mine = [r.id for r in runs if r.host == host]
    if not mine:
        have = ", ".join(sorted({r.host for r in runs}))
        raise VirtbenchError(f"--hosts: fleet {fleet} has no run of {host!r} (it has: {have})")
    return mine[-1]


def _side(store: Store, run_id: str, runtime: str | None) -> Frame:
    """A run's samples, or those of one of its runtimes (named by --runtimes)."""
    f = store.frame(store.run(run_id).id)
    if runtime is None:
        return f
    have = sorted(f.distinct("runtime"))
    if runtime not in have:
        raise VirtbenchError(
            f"--runtimes: run {run_id} has no {runtime!r} samples (it has: {', '.join(have)})"
        )
    return f.take(f.where("runtime", runtime))


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
    hosts: Annotated[
        str | None,
        typer.Option("--hosts", help="a,b: with a fleet id, host a's run against host b's."),
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            help="Also write the verdicts as a Markdown table here (a pull request's comment).",
        ),
    ] = None,
    json_out: Annotated[
        Path | None,
        typer.Option(
            "--json",
            help="Also write B's figures here in Bencher Metric Format "
            "JSON (`bencher run --adapter json`).",
        ),
    ] = None,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Is B slower than A? Per metric: medians, change, permutation p, verdict. Exit 1 on a
    regression (worse, failed, missing), 3 when too few samples decide nothing, 2 on bad
    input (for CI jobs)."""
    from virtbench.report import compare as cmp
    from virtbench.report.trust import trust_notes

    if len(run_ids) > 2:
        raise VirtbenchError("compare: give one run (with --runtimes a,b) or two runs")
    if not 0 < alpha < 1:
        raise VirtbenchError(f"--alpha: {alpha:g} must be between 0 and 1, e.g. 0.05")
    if min_effect < 0:
        raise VirtbenchError(f"--min-effect: {min_effect:g} must be a percentage >= 0, e.g. 5")
    if fail_on not in ("worse", "change", "never"):
        raise VirtbenchError(f"--fail-on: {fail_on!r} is not one of worse, change, never")
    pair = comma_list(runtimes, "--runtimes")
    host_pair = comma_list(hosts, "--hosts")
    n_pair = len(pair or [])
    if host_pair is not None and (len(host_pair) != 2 or len(run_ids) != 1):
        raise VirtbenchError("--hosts: give two hosts a,b and one fleet id")
    if (pair is not None and n_pair not in (1, 2)) or (
        len(run_ids) == 1 and n_pair != 2 and host_pair is None
    ):
        raise VirtbenchError("--runtimes: give two runtimes a,b (one is enough with two runs)")
    store = read_results(results, store_url)
    if host_pair is not None:
        id_a, id_b = (_fleet_host(store, run_ids[0], h) for h in host_pair)
    else:
        id_a, id_b = store.run(run_ids[0]).id, store.run(run_ids[-1]).id
    rt_a, rt_b = (pair[0], pair[-1]) if pair else (None, None)
    a, b = _side(store, id_a, rt_a), _side(store, id_b, rt_b)
    metric_names = comma_list(metric, "--metric")
    rows = cmp.compare(a, b, with_runtime=pair is None, alpha=alpha,
                       min_effect=min_effect / 100, metrics=metric_names)  # fmt: skip
    name_a = f"{id_a}" + (f" {host_pair[0]}" if host_pair else "") + (f" {rt_a}" if rt_a else "")
    name_b = f"{id_b}" + (f" {host_pair[1]}" if host_pair else "") + (f" {rt_b}" if rt_b else "")
    title = f"B against A (min effect {min_effect:g}%, alpha {alpha:g})"
    print_table(cmp.verdict_table(title, rows, name_a, name_b))
    for path, text in (
        (markdown, lambda: cmp.markdown(title, rows, name_a, name_b)),
        (json_out, lambda: json.dumps(cmp.bmf(rows, name_b), indent=2) + "\n"),
    ):
        if path is not None:
            try:
                path.write_text(text())
            except OSError as exc:
                flag = "--markdown" if path == markdown else "--json"
                raise VirtbenchError(f"{flag} {path}: cannot write ({exc.strerror})") from None
    for line in cmp.reasons(rows):
        out.print(f"no ratio: {escape(line)}", soft_wrap=True)
    n = cmp.counts(rows)
    always = ("worse", "better", "no change", "too few")
    out.print(", ".join(f"{v} {k}" for k, v in n.items() if v or k in always))
    out.print("[dim]n: independent units per side (repetitions; nested values averaged "
              "within each)[/]", soft_wrap=True)  # fmt: skip
    for side, rows_ in (("A", a), ("B", b)):
        for level, message in trust_notes(rows_):
            out.print(f"{side}: {level}: {escape(message)}", soft_wrap=True)
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
        bands = tuple(float(v) for v in comma_list(value, flag) or [])
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
        Path | None,
        typer.Option(
            "--plots",
            help="Where every plot is also written as PNG and SVG (default: the "
            "report's name with -plots, beside it).",
        ),
    ] = None,
    desmet_weights: Annotated[
        str | None,
        typer.Option(
            "--desmet-weights",
            help="DESMET importance per measure, pattern=weight,... (e.g. 'boot.*=2,*tps*=3'; "
            "default: the spec's desmet_weights, else 1).",
        ),
    ] = None,
    global_test: Annotated[
        str,
        typer.Option(
            "--global-test", help="Across runtimes: kruskal (+ Dunn) or anova (+ Tukey HSD)."
        ),
    ] = "kruskal",
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Write one self-contained HTML report (tables, plots, warnings, scores) of runs; a
    fleet id stands for its runs, and runs of several hosts are also compared by host."""
    from virtbench.analysis.stats import DESMET_BANDS
    from virtbench.report import html

    if global_test not in ("kruskal", "anova"):
        raise VirtbenchError(f"--global-test: {global_test!r} is not one of kruskal, anova")
    if cv_warn <= 0:
        raise VirtbenchError(f"--cv-warn: {cv_warn:g} must be a percentage > 0, e.g. 10")
    bands = {
        "higher": _bands(bands_higher, "--bands-higher", DESMET_BANDS["higher"]),
        "lower": _bands(bands_lower, "--bands-lower", DESMET_BANDS["lower"]),
        "boot": _bands(bands_boot, "--bands-boot", DESMET_BANDS["boot"]),
    }
    store = read_results(results, store_url)
    run_ids = resolve(store, run_ids)  # "latest", a fleet -> run ids; unknown: error
    have = {r for rid in run_ids for r in store.frame(rid).distinct("runtime")}
    for flag, value in (("--baseline", baseline), ("--boot-baseline", boot_baseline)):
        if value is not None and value not in have:
            raise VirtbenchError(
                f"{flag}: no {value!r} samples in these runs (they have: {', '.join(sorted(have))})"
            )
    if plots is None:
        plots = output.with_name(f"{output.stem}-plots")
    opts = html.Options(baseline=baseline, bands=bands, cv_warn=cv_warn / 100, plots_dir=plots,
                        global_test=global_test, boot_baseline=boot_baseline,
                        weights=_weights(desmet_weights))  # fmt: skip
    text = html.render(store, run_ids, opts)
    try:
        output.write_text(text)
    except OSError as exc:
        raise VirtbenchError(f"-o {output}: cannot write ({exc.strerror})") from None
    out.print(f"report of {', '.join(run_ids)} written to {output} ({len(text) / 1024:.0f} KiB); "
              f"its plots as PNG and SVG in {plots}")  # fmt: skip


def _weights(text: str | None) -> dict[str, float]:
    """`--desmet-weights 'boot.*=2,*tps*=3'` as {pattern: weight}."""
    if text is None:
        return {}
    out = {}
    for item in [x.strip() for x in text.split(",") if x.strip()]:
        pattern, sep, value = item.rpartition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = -1.0
        if not sep or not pattern or not 0 <= weight <= 1000:
            raise VirtbenchError(
                f"--desmet-weights: {item!r} is not pattern=weight (a weight in 0..1000)"
            )
        out[pattern] = weight
    return out


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
    store_url: StoreOpt = None,
) -> None:
    """Export a run's samples (and, as NDJSON, the run and its events)."""
    from virtbench.report import export as ex

    if show_schema:
        sys.stdout.write(ex.schema_text())
        return
    if run_id is None:
        raise VirtbenchError("export: give a run id (see `virtbench list`), or --schema")
    if fmt not in ex.FORMATS:
        raise VirtbenchError(f"--format: {fmt!r} is not one of {', '.join(ex.FORMATS)}")
    store = read_results(results, store_url)
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
