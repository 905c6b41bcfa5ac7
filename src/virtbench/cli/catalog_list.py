"""`virtbench catalog`'s entries and its listing.

Each entry is listed in the group a reader looks for it in (start here, the studies,
S1's experiments under their own names, sandbox questions, one experiment type at a
time), one line each, wrapped at word boundaries to the terminal, with its estimate
here. What this host cannot run (a runtime that is not here, a runtime that cannot run
a part, a client program that is missing) is marked [n] on the entries it concerns and
said once, below the listing, with those entries.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rich.text import Text

from virtbench.cli.common import out
from virtbench.errors import SpecError, VirtbenchError

if TYPE_CHECKING:  # the spec's models take a while to build: imported where used
    from virtbench import spec as specmod
    from virtbench.run.preflight import Preflight
    from virtbench.spec.resolved import Plan, RuntimePlan

# the groups, in the order listed, each with its heading
START = "Start here"
STUDIES = "The five studies"
PARTS = "S1's experiments under their own names"
SANDBOX = "Sandbox questions"
TYPES = "One experiment type at a time"
MORE = "More entries"
GROUPS = (START, STUDIES, PARTS, SANDBOX, TYPES, MORE)
# an entry's group: a study (its `study` field) or a study's part (one of its `aliases`),
# else this table, in its order within the group; MORE for an entry it lacks
PLACE = {
    "quickstart": START,
    "sandbox": SANDBOX,
    "burst": SANDBOX,
    "pods": SANDBOX,
    "boot": TYPES,
    "density": TYPES,
    "throughput": TYPES,
    "scalability": TYPES,
    "isolation": TYPES,
}
# a sentence ends at a period after a word, before the next sentence's capital: not at
# an ellipsis (`sqlite|... for`), nor before a word in lower case (`e.g. qemu:q35:tcg`)
SENTENCE_END = re.compile(r"(?<=[^.\s]\.)\s+(?=[A-Z])")
PART = re.compile(r"(?P<type>\S+) \((?P<workload>.+)\)")  # preflight's `isolation (nginx)`
NO_RUNNER = ": no runtime here can run it"  # preflight's, beside the refusal that caused it


@dataclass(frozen=True)
class Entry:
    """One catalog entry as the catalog lists it."""

    name: str
    plan: Plan  # its full form, resolved
    quick: Plan | None  # its --quick form
    group: str = MORE
    rank: int = 0  # its place in its group

    @property
    def spec(self) -> specmod.Spec:
        """Its spec (full form)."""
        return self.plan.spec

    @property
    def summary(self) -> str:
        """The description's first sentence, whole."""
        first = SENTENCE_END.split(self.spec.description.strip(), maxsplit=1)[0]
        return first if first.endswith(".") else first + "."


def entries() -> list[Entry]:
    """Every catalog entry, group by group (GROUPS), each group in its own order."""
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
    parts = {a: i for e in found if e.spec.study for i, a in enumerate(e.spec.aliases)}
    placed = [Entry(e.name, e.plan, e.quick, *_place(e, parts)) for e in found]
    return sorted(placed, key=lambda e: (GROUPS.index(e.group), e.rank, e.name))


def _place(e: Entry, parts: dict[str, int]) -> tuple[str, int]:
    """The entry's group and its rank there (`parts`: each study's part -> its place)."""
    if e.spec.study:
        return STUDIES, 0
    if e.name in parts:
        return PARTS, parts[e.name]
    if e.name in PLACE:
        return PLACE[e.name], list(PLACE).index(e.name)
    return MORE, 0


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


@dataclass(frozen=True)
class Refusal:
    """Why this host cannot run something: the runtime or host program it concerns, and
    why (with the fix where one is known). Entries that share one share its note."""

    subject: str
    reason: str


@dataclass(frozen=True)
class Lack:
    """What an entry loses here: a runtime, a runtime's parts, a client program, or a
    part preflight skipped for a reason of its own (`why` None: `what` says it)."""

    what: str
    why: Refusal | None
    kind: Literal["runtime", "part", "tool", "other"]


@dataclass(frozen=True)
class Here:
    """What of an entry runs on this host (`runs` None: none of it), and what it lacks."""

    runs: Plan | None
    lacks: tuple[Lack, ...]

    @property
    def absent(self) -> list[str]:
        """The runtimes and host programs that are not here."""
        return [x.what for x in self.lacks if x.kind in ("runtime", "tool")]


def survey(resolved: Plan) -> Here:
    """What of `resolved` runs here, as preflight decides it, and everything it lacks:
    preflight run as for a study (skipping what cannot run), so that every refusal is
    found, not only the first; an entry that does not skip runs only if none is."""
    from virtbench.run import preflight

    spec = resolved.spec
    whole = resolved.narrowed(spec.model_copy(update={"unavailable": "skip"}))
    check = preflight.Preflight(whole)
    try:
        check.runtimes()
        exps = [check.experiment(part) for part in whole.parts]
    except Exception as exc:  # a check that broke: said, the listing goes on
        broke = Lack(f"could not check ({type(exc).__name__}: {exc})", None, "other")
        return Here(None, (broke,))
    lost = [*_absent(resolved, check), *_cannot(check), *_skipped(check)]
    lacks = (*lost, *_tools(spec))
    if not lost:
        return Here(resolved, lacks)
    if spec.unavailable != "skip":
        return Here(None, lacks)
    try:
        return Here(check.result(exps)[0], lacks)
    except VirtbenchError:  # none of its runtimes is here
        return Here(None, lacks)


def _availability_reason(runtime: RuntimePlan) -> str:
    """Why `runtime` is not available here, with its fix."""
    try:
        avail = runtime.available()
    except Exception as exc:  # a check that fails says so
        return f"check failed: {exc}"
    return avail.reason + (f"; fix: {avail.fix}" if avail.fix else "")


def _absent(resolved: Plan, check: Preflight) -> Iterator[Lack]:
    for label, runtime in resolved.runtimes.items():
        if label not in check.here:
            yield Lack(label, Refusal(label, _availability_reason(runtime)), "runtime")


def _cannot(check: Preflight) -> Iterator[Lack]:
    """Each runtime's parts it cannot run here, as `qemu's isolation (nginx, redis)`."""
    for (label, why), parts in check.cannot.items():
        by_type: dict[str, list[str]] = {}
        for part in dict.fromkeys(parts):
            m = PART.fullmatch(part)
            by_type.setdefault(m["type"] if m else part, []).append(m["workload"] if m else "")
        shown = [f"{t} ({', '.join(w)})" if all(w) else t for t, w in by_type.items()]
        yield Lack(f"{label}'s {', '.join(shown)}", Refusal(label, why), "part")


def _skipped(check: Preflight) -> Iterator[Lack]:
    """What preflight skipped that the runtimes' own refusals do not already say."""
    said = tuple(f"{label}: not available here: " for label in check.plan.runtimes)
    for line in check.skipped:
        if not line.startswith(said) and not line.endswith(NO_RUNNER):
            yield Lack(line, None, "other")


def _tools(spec: specmod.Spec) -> Iterator[Lack]:
    for tool in tools_of(spec):
        if shutil.which(tool) is None:
            yield Lack(tool, Refusal(tool, "not on PATH (make setup installs it)"), "tool")


class Notes:
    """The refusals the listing marks [n], each said once below it with the runtimes or
    programs it concerns (one reason may stand for several: docker and docker:runsc)
    and the entries."""

    def __init__(self) -> None:
        self.subjects: dict[str, list[str]] = {}  # reason -> the runtimes/programs
        self.entries: dict[str, list[str]] = {}  # reason -> the entries

    def mark(self, lack: Lack, entry: str) -> str:
        """`lack` as the entry's line says it, with its note's number."""
        if lack.why is None:
            return lack.what
        reason = lack.why.reason
        for seen, new in ((self.subjects, lack.why.subject), (self.entries, entry)):
            if new not in seen.setdefault(reason, []):
                seen[reason].append(new)
        return f"{lack.what} [{list(self.entries).index(reason) + 1}]"

    def print(self) -> None:
        """Each refusal once, with what and which entries it concerns."""
        if not self.entries:
            return
        out.print()
        out.print(Text("What this host lacks ([n] above), and the entries it concerns:", "bold"))
        for n, (reason, names) in enumerate(self.entries.items(), 1):
            what = ", ".join(self.subjects[reason])
            said = f"[{n}] {what}: {reason.rstrip('.')}. Concerns: {', '.join(names)}."
            hang(said, 2, 6)


def print_listing(listed: list[Entry], costs: dict[str, float]) -> None:
    """The entries group by group, a heading above each, one wrapped line per entry;
    the refusals below them all."""
    notes = Notes()
    group = None
    for e in listed:
        if e.group != group:
            if group is not None:
                out.print()
            out.print(Text(e.group, "bold"))
            group = e.group
        hang(entry_line(e, costs, notes), 2, 6, bold=len(e.name))
    notes.print()


def entry_line(e: Entry, costs: dict[str, float], notes: Notes) -> str:
    """`name — summary (estimate here: ...; --quick: ...; not here: ...; needs ...; you
    bring: ...)`."""
    here = survey(e.plan)
    lost = [notes.mark(x, e.name) for x in here.lacks if x.kind != "tool"]
    needs = [notes.mark(x, e.name) for x in here.lacks if x.kind == "tool"]
    if here.runs is None:
        said = [f"cannot run here: {', '.join(lost)}"]
    else:
        took, quick_took, _ = durations(e, here.runs, costs)
        said = [f"estimate here: {took}", f"--quick: {quick_took}"]
        said += [f"not here: {', '.join(lost)}"] if lost else []
    said += [f"needs {', '.join(needs)}"] if needs else []
    if e.spec.brings:  # the guests it compared that only you can give it
        said.append(f"you bring: {', '.join(b.guest for b in e.spec.brings)}")
    return f"{e.name} — {e.summary} ({'; '.join(said)})"


def durations(e: Entry, runs: Plan, costs: dict[str, float]) -> tuple[str, str, Plan | None]:
    """How long the entry takes here, full (`runs`: what of it runs here) and --quick,
    and what of its quick form runs here."""
    from virtbench.run import plan

    quick = survey(e.quick).runs if e.quick else None
    quick_took = "no quick form" if e.quick is None else "cannot run here"
    if quick is not None:
        quick_took = plan.duration(plan.total_s(quick, costs))
    return plan.duration(plan.total_s(runs, costs)), quick_took, quick


def hang(text: str, indent: int = 2, more: int = 6, bold: int = 0) -> None:
    """`text` as one paragraph wrapped to the terminal at spaces only (never inside a
    word, a flag or a path), indented `indent`, its continuation lines `more`; its first
    `bold` characters in bold."""
    lines = textwrap.wrap(
        text,
        max(40, out.width),
        initial_indent=" " * indent,
        subsequent_indent=" " * more,
        break_long_words=False,
        break_on_hyphens=False,
    )
    for i, line in enumerate(lines):
        shown = Text(line)
        if i == 0 and bold:
            shown.stylize("bold", indent, indent + bold)
        out.print(shown, soft_wrap=True)
