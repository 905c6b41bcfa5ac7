"""The commands that write what a store holds elsewhere: report (HTML) and export."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, TypedDict

import typer

from virtbench.cli.common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    app,
    comma_list,
    err,
    one_line_errors,
    out,
    read_results,
)
from virtbench.cli.results import resolve
from virtbench.errors import VirtbenchError
from virtbench.store import Store


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
    typer.Option(
        "--baseline",
        help="Runtime the answers' ratios and the DESMET scores are against (default: the "
        "best of each answer; native for the scores).",
    ),
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
HostPriceOpt = Annotated[
    float | None,
    typer.Option(
        "--host-price",
        metavar="USD",
        help="What a host costs per hour: the report adds instances per host and cost per "
        "instance-hour, from the run's memory and idle CPU per instance.",
    ),
]
HostMemoryOpt = Annotated[
    float | None,
    typer.Option(
        "--host-memory",
        metavar="GIB",
        help="With --host-price: its memory (default: the run's host's).",
    ),
]
HostCpusOpt = Annotated[
    float | None,
    typer.Option(
        "--host-cpus", metavar="N", help="With --host-price: its CPUs (default: the run's host's)."
    ),
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
    host_price: HostPriceOpt = None,
    host_memory: HostMemoryOpt = None,
    host_cpus: HostCpusOpt = None,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Write an HTML report of runs.

    One self-contained file (tables, plots, warnings, scores); a fleet id stands for its
    runs, and runs of several hosts are also compared by host."""
    from virtbench.report import html

    if global_test not in ("kruskal", "anova"):
        raise VirtbenchError(f"--global-test: {global_test!r} is not one of kruskal, anova")
    if cv_warn <= 0:
        raise VirtbenchError(f"--cv-warn: {cv_warn:g} must be a percentage > 0, e.g. 10")
    bands = _all_bands(bands_higher, bands_lower, bands_boot)
    host = _host(host_price, host_memory, host_cpus)
    store = read_results(results, store_url)
    run_ids = resolve(store, run_ids)  # "latest", a fleet -> run ids; unknown: error
    _check_baselines(store, run_ids, baseline, boot_baseline)
    if plots is None:
        plots = output.with_name(f"{output.stem}-plots")
    opts = html.Options(
        baseline=baseline,
        ratio_baseline=baseline,
        bands=bands,
        cv_warn=cv_warn / 100,
        plots_dir=plots,
        global_test=global_test,
        boot_baseline=boot_baseline,
        weights=_weights(desmet_weights),
        **host,
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


class _HostCost(TypedDict, total=False):
    """html.Options' fields of the host a cost is worked out for."""

    host_price: float
    host_memory_gib: float
    host_cpus: float


def _host(price: float | None, memory: float | None, cpus: float | None) -> _HostCost:
    """The host the cost is worked out for, as html.Options takes it; each a number > 0,
    and its size only with a price."""
    given = {"--host-price": price, "--host-memory": memory, "--host-cpus": cpus}
    for flag, value in given.items():
        if value is not None and not value > 0:
            raise VirtbenchError(f"{flag}: {value:g} must be more than 0")
    if price is None and (memory is not None or cpus is not None):
        raise VirtbenchError(
            "--host-memory and --host-cpus size the host --host-price prices: give it"
        )
    if price is None:
        return {}
    out: _HostCost = {"host_price": price}
    if memory:
        out["host_memory_gib"] = memory
    if cpus:
        out["host_cpus"] = cpus
    return out


def _all_bands(
    higher: str | None, lower: str | None, boot: str | None
) -> dict[str, tuple[float, ...]]:
    """The DESMET bands of each kind of measure: as given, else the defaults."""
    from virtbench.report.desmet import DESMET_BANDS

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
    """Export a run's samples.

    As NDJSON, also the run and its events."""
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
