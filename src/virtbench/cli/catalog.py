"""`virtbench catalog`: every built-in entry, the study it re-runs, what it needs (and
whether this host has it) and how long it takes here, full and `--quick`."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.text import Text

from virtbench.cli.common import DEFAULT_RESULTS, ResultsOpt, app, one_line_errors, out
from virtbench.errors import SpecError

if TYPE_CHECKING:  # the spec's models take a while to build: imported where used
    from virtbench import spec as specmod
    from virtbench.run import plan
    from virtbench.spec.resolved import Plan, RuntimePlan


@dataclass(frozen=True)
class Entry:
    """One catalog entry as the catalog lists it."""

    name: str
    plan: Plan  # its full form, resolved
    quick: Plan | None  # its --quick form

    @property
    def spec(self) -> specmod.Spec:
        return self.plan.spec

    @property
    def summary(self) -> str:
        """The description's first sentence."""
        first = self.spec.description.split(". ", 1)[0].rstrip(".")
        return first + "."


def entries() -> list[Entry]:
    """Every catalog entry, studies first (s1 ... s5), then the others by name."""
    from virtbench import spec as specmod
    from virtbench.spec import flags as spec_flags
    from virtbench.spec.resolved import resolve

    found = []
    for name in specmod.catalog_names():
        _, raw, where = specmod.load(name)
        full = resolve(spec_flags.with_overrides(raw, where, None, {}))
        try:
            quick = resolve(spec_flags.with_overrides(raw, where, None, {}, quick=True))
        except SpecError:
            quick = None
        found.append(Entry(name, full, quick))
    return sorted(found, key=lambda e: (not e.spec.study, e.name))


def tools_of(spec: specmod.Spec) -> list[str]:
    """The host programs the spec's workloads drive them with (clients, tools)."""
    from virtbench import workloads

    names: list[str] = []
    for exp in spec.experiment:
        for w in getattr(exp, "workloads_needed", lambda: [])():
            serves = workloads.get(w).serves
            for tool in serves.clients if serves is not None else ():
                if not tool.startswith("/bin/vb-") and tool not in names:
                    names.append(tool)
    return names


def runtime_here(runtime: RuntimePlan) -> tuple[bool, str]:
    """Whether `runtime` can run here, and why not."""
    try:
        avail = runtime.available()
    except Exception as exc:  # a check that fails says so, it is not "available"
        return False, f"check failed: {exc}"
    return avail.ok, avail.reason


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
    """List the built-in entries: the study each re-runs, its needs, its duration here."""
    if presets:
        show_presets()
        return
    costs = past_costs(results)
    listed = _listed(name)
    basis = "this host's earlier boot runs" if costs else "typical figures for each runtime"
    for e in listed:
        _print_entry(e, costs, steps=name is not None)
    out.print(f"[dim]Estimates model each procedure with launch costs from {basis}.[/]")


def _listed(name: str | None) -> list[Entry]:
    """The entries to list: all of them, or the one `name` names (or is a part of)."""
    listed = entries()
    if name is None:
        return listed
    listed = [e for e in listed if e.name == name or name in e.spec.aliases]
    if not listed:
        from virtbench import spec as specmod

        names = ", ".join(specmod.catalog_names())
        raise SpecError(f"{name}: no such catalog entry (catalog: {names})")
    return listed


def _print_entry(e: Entry, costs: dict[str, float], steps: bool) -> None:
    """One entry: what it is, what it needs and whether this host has it, how long it
    takes here (full and --quick) and, with `steps`, each form's experiments."""
    from virtbench.run import plan

    out.print(f"[bold]{e.name}[/]")
    say(escape(e.summary))
    if e.spec.study:
        say(f"study: {escape(e.spec.study)}")
    if e.spec.aliases:
        say(f"parts, also entries: {', '.join(e.spec.aliases)}")
    _say_needs(e.plan)
    full, skipped, why_not = here(e.plan)
    quick = here(e.quick)[0] if e.quick else None
    if full is None:
        say(f"[red]cannot run here[/]: {escape(why_not)}")
        return
    for line in skipped:
        say(f"skipped here: {escape(line)}")
    took = plan.duration(plan.total_s(full, costs))
    quick_took = plan.duration(plan.total_s(quick, costs)) if quick else "no quick form"
    say(f"estimate here: {took}; --quick: {quick_took}")
    if steps:
        for form, resolved in (("full", full), ("quick", quick)):
            for step in plan.steps(resolved, costs) if resolved else []:
                say(f"{form:5} {_step(step)}", 4)


def _say_needs(resolved: Plan) -> None:
    """The entry's runtimes and tools, each marked where this host lacks it."""
    marks = []
    for label, runtime in resolved.runtimes.items():
        ok, why = runtime_here(runtime)
        marks.append(label if ok else f"{label} [red](absent: {escape(why)})[/]")
    say(f"runtimes: {', '.join(marks)}")
    tools = tools_of(resolved.spec)
    if tools:
        shown = [t if shutil.which(t) else f"{t} [red](absent)[/]" for t in tools]
        say(f"tools: {', '.join(shown)}")


def _step(step: plan.Step) -> str:
    from virtbench.run import plan

    return (f"{step.experiment} on {step.runtime}: {step.detail}; {step.launches:,} "
            f"instance starts, ~{plan.duration(step.seconds)}")  # fmt: skip


def print_plan(resolved: Plan, results: Path) -> None:
    """`virtbench run SPEC --plan`: what the run would do here, step by step, and about
    how long it would take (launch costs from this host's earlier boot runs in `results`
    when there are any), without starting anything."""
    from virtbench.run import plan

    costs = past_costs(results)
    spec = resolved.spec
    full, skipped, why_not = here(resolved)
    out.print(f"[bold]plan[/]: {escape(spec.name)} on {', '.join(spec.runtimes)} "
              "(nothing is started)")  # fmt: skip
    if full is None:
        say(f"[red]cannot run here[/]: {escape(why_not)}")
        return
    for line in skipped:
        say(f"skipped here: {escape(line)}")
    steps = plan.steps(full, costs)
    for step in steps:
        say(_step(step))
    starts = sum(st.launches for st in steps)
    basis = "this host's earlier boot runs" if costs else "typical figures for each runtime"
    say(f"in all: {len(steps)} steps, {starts:,} instance starts, about "
        f"{plan.duration(plan.total_s(full, costs))} here")  # fmt: skip
    out.print(f"[dim]An estimate: each procedure modelled with launch costs from {basis}.[/]")


def show_presets() -> None:
    """Each image preset: the command line it puts before the image's own, and notes."""
    from virtbench.runtimes.presets import PRESETS

    for p in PRESETS.values():
        out.print(f"[bold]{p.name}[/]")
        say(f"network: {escape(p.network)}")
        if p.always:
            say(f"always: {escape(p.always)}")
        say(f"then cmdline: {escape(p.args)}")
        say(escape(p.notes))
    out.print("[dim]Fields: {ip} {prefixlen} {netmask} {gateway} {mac} {name} {port}; the "
              "network part only on the run's bridge.[/]")  # fmt: skip
