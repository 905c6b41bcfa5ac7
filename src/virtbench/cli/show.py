"""`virtbench list` and `virtbench show`: the runs in a store, and one run's tables with
its events, host and artifacts (what `run` prints at its end)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from virtbench.cli.common import (
    DEFAULT_RESULTS,
    ResultsOpt,
    StoreOpt,
    app,
    one_line_errors,
    out,
    print_table,
    read_results,
)
from virtbench.errors import VirtbenchError
from virtbench.report import conditions, twocpu
from virtbench.report.hosts import named_line
from virtbench.store import Store
from virtbench.store.frame import Frame

TWO_CPUS_FROM = 200_000  # samples: below, a helper process costs more than it saves


@app.command("list")
@one_line_errors
def list_runs(results: ResultsOpt = DEFAULT_RESULTS, store_url: StoreOpt = None) -> None:
    """List the runs in the store."""
    from virtbench.report.tables import runs_table

    store = read_results(results, store_url)  # no store there: an error, none created
    rows = [(r, store.count_samples(r.id)) for r in store.runs()]
    if not rows:
        out.print(f"no runs in {store.location}")
        return
    print_table(runs_table(rows))


@app.command()
@one_line_errors
def show(
    run_id: Annotated[
        str, typer.Argument(metavar="RUN", help="Run id (see `virtbench list`), or latest.")
    ],
    wide: Annotated[
        bool, typer.Option("--wide", help="Also mean, SD, min-max and outliers.")
    ] = False,
    ids: Annotated[
        bool, typer.Option("--ids", help="Name figures by their ids (boot.spawn_to_exit).")
    ] = False,
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Set every runtime against this one (default: the best)."),
    ] = None,
    results: ResultsOpt = DEFAULT_RESULTS,
    store_url: StoreOpt = None,
) -> None:
    """Show one run's results.

    Per metric and runtime: median with 95% CI, CV and n."""
    store = read_results(results, store_url)
    record = store.run(run_id)
    if baseline is not None:
        have = store.frame(record.id).distinct("runtime")
        if baseline not in have:
            raise VirtbenchError(
                f"--baseline: run {record.id} has no runtime {baseline!r} "
                f"(it has: {', '.join(sorted(have))})"
            )
    out.print(f"run {record.id} ({record.name}): {record.status}")
    print_run(store, record.id, wide, ids, baseline)


def print_run(
    store: Store, run_id: str, wide: bool = False, ids: bool = False, baseline: str | None = None
) -> Frame | list[Any]:
    """Print the run's answers, then each experiment type's tables, then what to weigh
    (notes, events, the host, conditions, artifacts); return its samples (read once)."""
    from virtbench.report.cells import bounded_note
    from virtbench.report.sections import experiment_tables
    from virtbench.report.trust import CI_NOTE, trust_notes

    if not run_id:
        return []
    record = store.run(run_id)
    samples = store.frame(run_id)

    def tables() -> tuple[list[Table], list[Any], list[str]]:
        seen: list[Any] = []  # the summaries, for what their intervals were made with
        alike: list[str] = []  # what every runtime measured alike: said once, not as rows
        made = experiment_tables(record, samples, wide=wide, seen=seen, ids=ids, facts=alike)
        return made, seen, alike  # returned, not kept: the helper process may make them

    work: list[Callable[[], Any]] = [functools.partial(trust_notes, samples), tables]
    # a big run's notes are found on another CPU while its tables are made
    notes, (made, seen, alike) = (
        twocpu.in_order(work) if len(samples) >= TWO_CPUS_FROM else [task() for task in work]
    )
    print_answers(samples, ids, baseline)
    for table in made:
        print_table(table)
    say(f"[dim]{CI_NOTE}[/]")
    if bounded_note(seen):
        say(f"[dim]{bounded_note(seen)}[/]")
    _print_not_run(record)
    for _, level, message in store.events(run_id):
        if (run_id, level, message) not in store.said:  # said once: not again after a run
            say(f"{level}: {escape(message)}")
    for level, message in notes:
        say(f"{level}: {escape(message)}")
    for line in alike:
        say(f"[dim]the same for every runtime: {escape(line)}[/]")
    _print_facts(record, samples)
    return samples


def print_answers(samples: Frame, ids: bool = False, baseline: str | None = None) -> None:
    """Each question the run answers: its sentences, its ranked table, its notes;
    `baseline`: every runtime set against it rather than the best."""
    from virtbench.report import standing
    from virtbench.report.answers import answers

    for a in answers(samples, baseline):
        t = standing.table(a, ids)
        say(f"[bold]{escape(str(t.title))}[/]")
        t.title = None
        for line in a.sentences() or [a.undecided()]:
            say(f"  {escape(line)}")
        print_table(t)
        for line in standing.notes(a):
            say(f"[dim]{escape(line)}[/]")


def say(text: str) -> None:
    """A line of markup, wrapped at word boundaries to the terminal's width."""
    out.print(text, overflow="fold", soft_wrap=False)


def _print_not_run(record: Any) -> None:
    """The guests the run's study compared that no runtime of the run stood for."""
    entries = (record.environment or {}).get("not_run", [])
    if entries:  # the spec's models take a while to build: only for a run that has them
        from virtbench.run.preflight import not_run_line

        for entry in entries:
            say(f"[yellow]not run[/]: {escape(not_run_line(entry))}")


def _print_facts(record: Any, samples: Frame) -> None:
    """The host, named runtimes, each runtime's conditions and the artifacts."""
    env = record.environment
    if env:
        versions = ", ".join(f"{k} {v}" for k, v in env.get("runtimes", {}).items())
        say(
            f"[dim]host: {escape(str(env.get('cpu_model')))} x{env.get('cpu_count')}, "
            f"kernel {env.get('kernel')}, cgroup {env.get('cgroup_version')}, "
            f"kvm {env.get('kvm')}{_smt_and_mitigations(env)}; runtimes {versions}[/]"
        )
    for label, named in (env or {}).get("named_runtimes", {}).items():
        say(f"[dim]{escape(named_line(label, named))}[/]")
    if (env or {}).get("loadgen"):
        from virtbench.loadgen.baseline import describe

        say(f"[dim]{escape(describe(env['loadgen']))}[/]")
    for level, text in conditions.shown(samples):
        style = "dim" if level == "conditions" else "default"
        say(f"[{style}]{level}: {escape(text)}[/]")
    for art in record.artifacts:
        size = f"{art['disk_bytes'] / 1024:.0f} KiB on disk"
        say(f"[dim]artifact {art['name']} {art['digest'][:16]}: {size}[/]")


def _smt_and_mitigations(env: dict[str, Any]) -> str:
    """`, SMT: off, mitigations: auto (12 mitigated, 1 vulnerable)` for the host line."""
    from virtbench.report.facts import mitigations_words, smt_words

    text = f", SMT: {smt_words(env['smt_control'])}" if "smt_control" in env else ""
    m = env.get("mitigations")
    if isinstance(m, dict):
        text += f", mitigations: {mitigations_words(m)}"
    return text
