"""`virtbench compare`: is B slower than A? (report and export: cli/report.py)"""

from __future__ import annotations

import json
from collections.abc import Callable
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


AcrossOpt = Annotated[
    bool,
    typer.Option(
        "--across-testbeds",
        help="Give verdicts for two runs from different testbeds (machines) too.",
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
    across_testbeds: AcrossOpt = False,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Test whether run B is slower than A.

    Per metric: medians, change, permutation p, verdict. Exit 1 on a
    regression (worse, failed, missing), 3 when too few samples decide nothing, 2 on bad
    input (for CI jobs)."""
    from virtbench.report import compare as cmp
    from virtbench.report import compare_words as cmp_words

    pair, host_pair = _compare_pairs(run_ids, runtimes, hosts, min_effect, alpha, fail_on)
    store = read_results(results, store_url)
    sides = _sides(store, run_ids, pair, host_pair)
    _check_testbeds(store, sides, across_testbeds or host_pair is not None)
    rows = cmp.compare(
        sides.a,
        sides.b,
        with_runtime=pair is None,
        alpha=alpha,
        min_effect=min_effect / 100,
        metrics=comma_list(metric, "--metric"),
    )
    title = cmp.title(sides.name_a, sides.name_b, min_effect, alpha)
    for line in cmp_words.sentences(rows, sides.name_a, sides.name_b):
        out.print(escape(line))
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


def _check_testbeds(store: Store, sides: _Sides, across: bool) -> None:
    """Two runs from different testbeds: refused, unless `across` (then said)."""
    from virtbench.host import testbed

    id_a, id_b = (name.split()[0] for name in (sides.name_a, sides.name_b))
    if id_a == id_b:
        return
    env_a, env_b = store.run(id_a).environment, store.run(id_b).environment
    differ = testbed.differences(env_a, env_b)
    if not differ:
        return
    what = (
        f"{id_a} ran on {testbed.describe(env_a)}, {id_b} on {testbed.describe(env_b)} "
        f"({'; '.join(differ)})"
    )
    if not across:
        raise VirtbenchError(
            f"compare: {id_a} and {id_b} are different testbeds ({'; '.join(differ)}): a "
            "difference would mix the machines with what changed; --across-testbeds "
            "compares them anyway"
        )
    out.print(escape(f"across testbeds: {what}"))


def _write_verdicts(
    markdown: Path | None, json_out: Path | None, title: str, rows: list[Row], sides: _Sides
) -> None:
    """`--markdown` and `--json`: the verdicts also as a Markdown table, B's figures as
    Bencher Metric Format, each where it was asked for."""
    from virtbench.report import bmf
    from virtbench.report import compare_words as cmp_words

    wanted: list[tuple[Path | None, Callable[[], str]]] = [
        (markdown, lambda: cmp_words.markdown(title, rows, sides.name_a, sides.name_b)),
        (json_out, lambda: json.dumps(bmf.of_rows(rows, sides.name_b), indent=2) + "\n"),
    ]
    for path, text in wanted:
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
        out.print(f"no ratio: {escape(line)}")
    n = cmp.counts(rows)
    always = ("worse", "better", "no change", "too few")
    out.print(", ".join(f"{v} {k}" for k, v in n.items() if v or k in always))
    out.print(
        "[dim]n: independent units per side (repetitions; nested values averaged within "
        'each); p "< x": no resample of the permutation test was as far apart[/]'
    )
    for side, samples in (("A", sides.a), ("B", sides.b)):
        for level, message in trust_notes(samples):
            out.print(f"{side}: {level}: {escape(message)}")
    _print_conditions(sides)
    return n


def _print_conditions(sides: _Sides) -> None:
    """Each side's conditions, and a warning when they differ."""
    from virtbench.report import conditions

    got = []
    for side, samples in (("A", sides.a), ("B", sides.b)):
        conds = conditions.of_runtimes(samples)
        merged = {k: v for c in conds.values() for k, v in c.items()}  # one runtime a side
        for runtime, c in conds.items():
            out.print(f"[dim]{side} conditions: {escape(conditions.line(runtime, c))}[/]")
        got.append(merged)
    if (said := conditions.warning(sides.name_a, got[0], sides.name_b, got[1])) is not None:
        out.print(f"warning: {escape(said)}")


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
