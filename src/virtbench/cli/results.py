"""The commands that read the store: compare, report, export."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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

if TYPE_CHECKING:
    from virtbench.report.compare import Row


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


RunPairArg = Annotated[
    list[str],
    typer.Argument(metavar="A [B]", help="Two runs, or one run with --runtimes a,b."),
]
RuntimePairOpt = Annotated[
    str | None,
    typer.Option(
        "--runtimes",
        help="a,b: runtime a (of run A) against runtime b (of run B, or of the same run).",
    ),
]
MinEffectOpt = Annotated[
    float, typer.Option("--min-effect", help="Smallest change that counts, in %.")
]
AlphaOpt = Annotated[
    float, typer.Option("--alpha", help="Significance level (after Holm's correction).")
]
MetricOpt = Annotated[
    str | None,
    typer.Option("--metric", help="Only these metrics: comma-separated glob patterns."),
]
FailOnOpt = Annotated[
    str,
    typer.Option("--fail-on", help="Exit 1 when a verdict is: worse | change | never."),
]
HostPairOpt = Annotated[
    str | None,
    typer.Option("--hosts", help="a,b: with a fleet id, host a's run against host b's."),
]
MarkdownOpt = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        help="Also write the verdicts as a Markdown table here (a pull request's comment).",
    ),
]
BmfJsonOpt = Annotated[
    Path | None,
    typer.Option(
        "--json",
        help="Also write B's figures here in Bencher Metric Format "
        "JSON (`bencher run --adapter json`).",
    ),
]


@dataclass(frozen=True)
class _Sides:
    """What compare sets against each other: A's and B's samples, and their names (run id,
    then host and runtime where those were picked)."""

    a: Frame
    b: Frame
    name_a: str
    name_b: str


@app.command()
@one_line_errors
def compare(
    run_ids: RunPairArg,
    runtimes: RuntimePairOpt = None,
    min_effect: MinEffectOpt = 5.0,
    alpha: AlphaOpt = 0.05,
    metric: MetricOpt = None,
    fail_on: FailOnOpt = "worse",
    hosts: HostPairOpt = None,
    markdown: MarkdownOpt = None,
    json_out: BmfJsonOpt = None,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Is B slower than A? Per metric: medians, change, permutation p, verdict. Exit 1 on a
    regression (worse, failed, missing), 3 when too few samples decide nothing, 2 on bad
    input (for CI jobs)."""
    from virtbench.report import compare as cmp

    pair, host_pair = _compare_pairs(run_ids, runtimes, hosts, min_effect, alpha, fail_on)
    store = read_results(results, store_url)
    sides = _sides(store, run_ids, pair, host_pair)
    rows = cmp.compare(
        sides.a,
        sides.b,
        with_runtime=pair is None,
        alpha=alpha,
        min_effect=min_effect / 100,
        metrics=comma_list(metric, "--metric"),
    )
    title = f"B against A (min effect {min_effect:g}%, alpha {alpha:g})"
    print_table(cmp.verdict_table(title, rows, sides.name_a, sides.name_b))
    _write_verdicts(markdown, json_out, title, rows, sides)
    n = _print_counts(rows, sides)
    _exit_on(fail_on, n, len(rows))


def _compare_pairs(
    run_ids: list[str],
    runtimes: str | None,
    hosts: str | None,
    min_effect: float,
    alpha: float,
    fail_on: str,
) -> tuple[list[str] | None, list[str] | None]:
    """compare's options checked (errors name the flag): its runtimes a,b and hosts a,b,
    each None where not given."""
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
    return pair, host_pair


def _sides(
    store: Store, run_ids: list[str], pair: list[str] | None, host_pair: list[str] | None
) -> _Sides:
    """A and B as the user named them: two runs, or one run's two runtimes, or two hosts'
    runs of one fleet."""
    if host_pair is not None:
        id_a, id_b = (_fleet_host(store, run_ids[0], h) for h in host_pair)
    else:
        id_a, id_b = store.run(run_ids[0]).id, store.run(run_ids[-1]).id
    rt_a, rt_b = (pair[0], pair[-1]) if pair else (None, None)
    a, b = _side(store, id_a, rt_a), _side(store, id_b, rt_b)
    name_a = f"{id_a}" + (f" {host_pair[0]}" if host_pair else "") + (f" {rt_a}" if rt_a else "")
    name_b = f"{id_b}" + (f" {host_pair[1]}" if host_pair else "") + (f" {rt_b}" if rt_b else "")
    return _Sides(a, b, name_a, name_b)


def _write_verdicts(
    markdown: Path | None, json_out: Path | None, title: str, rows: list[Row], sides: _Sides
) -> None:
    """`--markdown` and `--json`: the verdicts also as a Markdown table, B's figures as
    Bencher Metric Format, each where it was asked for."""
    from virtbench.report import compare as cmp

    for path, text in (
        (markdown, lambda: cmp.markdown(title, rows, sides.name_a, sides.name_b)),
        (json_out, lambda: json.dumps(cmp.bmf(rows, sides.name_b), indent=2) + "\n"),
    ):
        if path is not None:
            try:
                path.write_text(text())
            except OSError as exc:
                flag = "--markdown" if path == markdown else "--json"
                raise VirtbenchError(f"{flag} {path}: cannot write ({exc.strerror})") from None


def _print_counts(rows: list[Row], sides: _Sides) -> dict[str, int]:
    """Below the table: why a row has no ratio, how many rows of each verdict, and what
    to trust less on either side; the verdicts' counts."""
    from virtbench.report import compare as cmp
    from virtbench.report.trust import trust_notes

    for line in cmp.reasons(rows):
        out.print(f"no ratio: {escape(line)}", soft_wrap=True)
    n = cmp.counts(rows)
    always = ("worse", "better", "no change", "too few")
    out.print(", ".join(f"{v} {k}" for k, v in n.items() if v or k in always))
    out.print(
        "[dim]n: independent units per side (repetitions; nested values averaged within each)[/]",
        soft_wrap=True,
    )
    for side, samples in (("A", sides.a), ("B", sides.b)):
        for level, message in trust_notes(samples):
            out.print(f"{side}: {level}: {escape(message)}", soft_wrap=True)
    return n


def _exit_on(fail_on: str, n: dict[str, int], n_rows: int) -> None:
    """compare's exit status: 1 on a regression (or, with --fail-on change, any change),
    3 when every row had too few samples; none with --fail-on never."""
    from virtbench.report import compare as cmp

    bad = sum(n[k] for k in cmp.REGRESSIONS) + (n["better"] if fail_on == "change" else 0)
    if bad and fail_on != "never":
        raise typer.Exit(1)
    if n["too few"] == n_rows and fail_on != "never":
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


ReportRunsArg = Annotated[list[str], typer.Argument(metavar="RUN...", help="Run ids, or latest.")]
ReportOutputOpt = Annotated[Path, typer.Option("-o", "--output", help="HTML file to write.")]
BaselineOpt = Annotated[
    str | None,
    typer.Option("--baseline", help="Runtime the scores are against (default: native)."),
]
BootBaselineOpt = Annotated[
    str | None,
    typer.Option("--boot-baseline", help="Runtime boot is scored against (S5: a VM)."),
]
BandsHigherOpt = Annotated[
    str | None,
    typer.Option("--bands-higher", help="Score bands, % of baseline (default 60,70,80,90)."),
]
BandsLowerOpt = Annotated[
    str | None,
    typer.Option("--bands-lower", help="Latency-like bands, % (default 140,130,120,110)."),
]
BandsBootOpt = Annotated[
    str | None, typer.Option("--bands-boot", help="Boot bands, % (default 40,30,20,10).")
]
CvWarnOpt = Annotated[
    float, typer.Option("--cv-warn", help="Warn about groups with a CV above this %.")
]
PlotsOpt = Annotated[
    Path | None,
    typer.Option(
        "--plots",
        help="Where every plot is also written as PNG and SVG (default: the "
        "report's name with -plots, beside it).",
    ),
]
DesmetWeightsOpt = Annotated[
    str | None,
    typer.Option(
        "--desmet-weights",
        help="DESMET importance per measure, pattern=weight,... (e.g. 'boot.*=2,*tps*=3'; "
        "default: the spec's desmet_weights, else 1).",
    ),
]
GlobalTestOpt = Annotated[
    str,
    typer.Option("--global-test", help="Across runtimes: kruskal (+ Dunn) or anova (+ Tukey HSD)."),
]


@app.command()
@one_line_errors
def report(
    run_ids: ReportRunsArg,
    output: ReportOutputOpt = Path("report.html"),
    baseline: BaselineOpt = None,
    boot_baseline: BootBaselineOpt = None,
    bands_higher: BandsHigherOpt = None,
    bands_lower: BandsLowerOpt = None,
    bands_boot: BandsBootOpt = None,
    cv_warn: CvWarnOpt = 10.0,
    plots: PlotsOpt = None,
    desmet_weights: DesmetWeightsOpt = None,
    global_test: GlobalTestOpt = "kruskal",
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Write one self-contained HTML report (tables, plots, warnings, scores) of runs; a
    fleet id stands for its runs, and runs of several hosts are also compared by host."""
    from virtbench.report import html

    if global_test not in ("kruskal", "anova"):
        raise VirtbenchError(f"--global-test: {global_test!r} is not one of kruskal, anova")
    if cv_warn <= 0:
        raise VirtbenchError(f"--cv-warn: {cv_warn:g} must be a percentage > 0, e.g. 10")
    bands = _all_bands(bands_higher, bands_lower, bands_boot)
    store = read_results(results, store_url)
    run_ids = resolve(store, run_ids)  # "latest", a fleet -> run ids; unknown: error
    _check_baselines(store, run_ids, baseline, boot_baseline)
    if plots is None:
        plots = output.with_name(f"{output.stem}-plots")
    opts = html.Options(
        baseline=baseline,
        bands=bands,
        cv_warn=cv_warn / 100,
        plots_dir=plots,
        global_test=global_test,
        boot_baseline=boot_baseline,
        weights=_weights(desmet_weights),
    )
    text = html.render(store, run_ids, opts)
    try:
        output.write_text(text)
    except OSError as exc:
        raise VirtbenchError(f"-o {output}: cannot write ({exc.strerror})") from None
    size = f"{len(text) / 1024:.0f} KiB"
    out.print(
        f"report of {', '.join(run_ids)} written to {output} ({size}); "
        f"its plots as PNG and SVG in {plots}"
    )


def _all_bands(
    higher: str | None, lower: str | None, boot: str | None
) -> dict[str, tuple[float, ...]]:
    """The DESMET bands of each kind of measure: as given, else the defaults."""
    from virtbench.analysis.stats import DESMET_BANDS

    return {
        "higher": _bands(higher, "--bands-higher", DESMET_BANDS["higher"]),
        "lower": _bands(lower, "--bands-lower", DESMET_BANDS["lower"]),
        "boot": _bands(boot, "--bands-boot", DESMET_BANDS["boot"]),
    }


def _check_baselines(
    store: Store, run_ids: list[str], baseline: str | None, boot_baseline: str | None
) -> None:
    """`--baseline` and `--boot-baseline` name runtimes these runs have samples of."""
    have = {r for rid in run_ids for r in store.frame(rid).distinct("runtime")}
    for flag, value in (("--baseline", baseline), ("--boot-baseline", boot_baseline)):
        if value is not None and value not in have:
            raise VirtbenchError(
                f"{flag}: no {value!r} samples in these runs (they have: {', '.join(sorted(have))})"
            )


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
