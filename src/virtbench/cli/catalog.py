"""`virtbench catalog`: the built-in entries grouped as a reader looks for them, one line
each with its duration here, full and `--quick` (catalog_list.py); `catalog NAME`: one
entry whole, with what it needs (and whether this host has it) and its experiments; and
`run SPEC --plan`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.text import Text

from virtbench.cli.catalog_list import (
    Entry,
    durations,
    entries,
    hang,
    print_listing,
    survey,
    tools_of,
)
from virtbench.cli.common import DEFAULT_RESULTS, ResultsOpt, app, one_line_errors, out
from virtbench.errors import SpecError
from virtbench.host.facts import platform_words

if TYPE_CHECKING:  # the spec's models take a while to build: imported where used
    from virtbench.run import plan
    from virtbench.spec.brings import Brought
    from virtbench.spec.resolved import Plan


def past_costs(directory: Path) -> dict[str, float]:
    """Start + stop seconds per runtime from this host's earlier boot runs, when a store
    exists in `directory` (never creates one)."""
    from virtbench.run import plan
    from virtbench.store import DB_NAME, Store

    if not (directory / DB_NAME).is_file():
        return {}
    store = Store(directory)
    try:
        samples = []
        for record in store.runs()[-20:]:
            if any(e.get("type") == "boot" for e in record.spec.get("experiment", [])):
                samples.extend(store.samples(record.id))
        return plan.launch_costs(samples)
    finally:
        store.close()


def here(resolved: Plan) -> tuple[Plan | None, list[str], str]:
    """What of `resolved` runs on this host: (the plan as it would run, what it skips and
    why, "") or (None, [], why it cannot run at all)."""
    from virtbench.errors import VirtbenchError
    from virtbench.run import preflight

    try:
        runs, _, skipped = preflight.check_available(resolved)
    except VirtbenchError as exc:
        return None, [], str(exc)
    except Exception as exc:  # a check that broke: said, the listing goes on
        return None, [], f"could not check ({type(exc).__name__}: {exc})"
    return runs, skipped, ""


def say(text: str, indent: int = 2) -> None:
    """One line of an entry, its wrapped continuation indented as deep as it is."""
    width = max(20, out.width - indent)
    for line in Text.from_markup(text).wrap(out, width):
        line.rstrip()
        out.print(Text(" " * indent) + line, soft_wrap=True)


EntryArg = Annotated[
    str | None, typer.Argument(help="One entry: also its experiments, step by step.")
]
PresetsOpt = Annotated[
    bool,
    typer.Option(
        "--presets",
        help="How images built elsewhere learn their address: the command-line "
        'conventions `preset = "..."` fills in (guest = "image").',
    ),
]


@app.command()
@one_line_errors
def catalog(
    name: EntryArg = None,
    results: ResultsOpt = DEFAULT_RESULTS,
    presets: PresetsOpt = False,
) -> None:
    """List the built-in entries, grouped.

    Each entry in one line: what it runs and how long it takes here, full and --quick.
    What this host cannot run is said once, below, with the entries it concerns. With
    NAME: that entry whole, with what it needs and its experiments, step by step."""
    if presets:
        show_presets()
        return
    costs = past_costs(results)
    basis = "this host's earlier boot runs" if costs else "typical figures for each runtime"
    if name is None:
        print_listing(entries(), costs)
        out.print()
    else:
        for e in _listed(name):
            _print_entry(e, costs)
    hang(f"Estimates model each procedure with launch costs from {basis}.", 0, 0)
    hang(f"Here is {platform_words()}.", 0, 0)


def _listed(name: str) -> list[Entry]:
    """The entries `name` names: the one of that name, and the studies it is a part of."""
    listed = [e for e in entries() if e.name == name or name in e.spec.aliases]
    if not listed:
        from virtbench import spec as specmod

        names = ", ".join(specmod.catalog_names())
        raise SpecError(f"{name}: no such catalog entry (catalog: {names})")
    return listed


def _print_entry(e: Entry, costs: dict[str, float]) -> None:
    """One entry whole: its description, what it needs and whether this host has it, what
    it cannot run here and why (each refusal once), how long it takes here (full and
    --quick) and each form's experiments."""
    from virtbench.run import plan

    out.print(Text(e.name, "bold"))
    say(escape(e.spec.description))
    if e.spec.study:
        say(f"study: {escape(e.spec.study)}")
    if e.spec.aliases:
        say(f"parts, also entries: {', '.join(e.spec.aliases)}")
    here = survey(e.plan)
    absent = set(here.absent)
    marked = [f"{x} [red](absent)[/]" if x in absent else x for x in e.plan.runtimes]
    say(f"runtimes: {', '.join(marked)}")
    tools = [f"{t} [red](absent)[/]" if t in absent else t for t in tools_of(e.spec)]
    if tools:
        say(f"tools: {', '.join(tools)}")
    for lack in here.lacks:
        why = f": {lack.why.reason}" if lack.why else ""
        say(f"not here: {escape(lack.what + why)}")
    for b in e.spec.brings:
        say(f"you bring: {escape(brought_line(b))}")
    if here.runs is None:
        say("[red]cannot run here[/] (above: what it lacks)")
        return
    took, quick_took, quick = durations(e, here.runs, costs)
    say(f"estimate here: {took}; --quick: {quick_took}")
    for form, resolved in (("full", here.runs), ("quick", quick)):
        for step in plan.steps(resolved, costs) if resolved else []:
            say(f"{form:5} {_step(step)}", 4)


def _step(step: plan.Step) -> str:
    from virtbench.run import plan

    return (
        f"{step.experiment} on {step.runtime}: {step.detail}; {step.launches:,} "
        f"instance starts, ~{plan.duration(step.seconds)}"
    )


def print_plan(resolved: Plan, results: Path) -> None:
    """`virtbench run SPEC --plan`: what the run would do here, step by step, and about
    how long it would take (launch costs from this host's earlier boot runs in `results`
    when there are any), without starting anything."""
    from virtbench.run import plan
    from virtbench.run.preflight import not_run, not_run_line

    costs = past_costs(results)
    spec = resolved.spec
    full, skipped, why_not = here(resolved)
    out.print(
        f"[bold]plan[/]: {escape(spec.name)} on {', '.join(spec.runtimes)} (nothing is started)"
    )
    if full is None:
        say(f"[red]cannot run here[/]: {escape(why_not)}")
        return
    for line in skipped:
        say(f"skipped here: {escape(line)}")
    for entry in not_run(resolved, full):  # a guest the study compared that this spec lacks
        say(f"not run: {escape(not_run_line(entry))}")
    steps = plan.steps(full, costs)
    for step in steps:
        say(_step(step))
    starts = sum(st.launches for st in steps)
    basis = "this host's earlier boot runs" if costs else "typical figures for each runtime"
    say(
        f"in all: {len(steps)} steps, {starts:,} instance starts, about "
        f"{plan.duration(plan.total_s(full, costs))} here"
    )
    out.print(f"[dim]An estimate: each procedure modelled with launch costs from {basis}.[/]")


def brought_line(b: Brought) -> str:
    """A guest a study brings, as `catalog NAME` says it: what a runtime that stands for it
    has, what building it needs, where the docs say how."""
    how = [f'preset = "{b.preset}"'] if b.preset else []
    how += [f'driver = "{d}"' for d in b.drivers]
    how.append(f'stands_for = "{b.guest}"')
    return f"{b.guest}, a runtime with {' or '.join(how)}: it {b.builds}; see {b.see}"


def brought_by_preset() -> dict[str, list[str]]:
    """Preset -> the guests the catalog's studies bring with it, each as `S2's
    includeos` (a study's parts, such as uk_ng_s, bring their study's)."""
    from virtbench import spec as specmod
    from virtbench.spec.brings import study_code

    found: dict[str, list[str]] = {}
    for name in specmod.catalog_names():
        spec = specmod.load(name)[0]
        for b in spec.brings if spec.study else []:
            if b.preset is not None:
                whose = study_code(spec.study) or spec.name
                found.setdefault(str(b.preset), []).append(f"{whose}'s {b.guest}")
    return found


def show_presets() -> None:
    """Each image preset: the command line it puts before the image's own, notes, and the
    studies' guests brought with it."""
    from virtbench.runtimes.vm.presets import PRESETS

    brought = brought_by_preset()
    for p in PRESETS.values():
        out.print(f"[bold]{p.name}[/]")
        say(f"network: {escape(p.network)}")
        if p.always:
            say(f"always: {escape(p.always)}")
        say(f"then cmdline: {escape(p.args)}")
        say(escape(p.notes))
        if p.name in brought:
            say(f"for the studies' guests: {', '.join(brought[p.name])}")
    out.print(
        "[dim]Fields: {ip} {prefixlen} {netmask} {gateway} {mac} {name} {port}; the "
        "network part only on the run's bridge.[/]"
    )
