"""What a figure is: the `Metric` declaration and the units shared by the declarations.

Each figure is a module-level constant declared once, where it is measured (its
experiment type's or workload's module), and recorded through it: `SPAWN_TO_READY.sample(
value, **labels)` gives the stored sample its name, unit and direction; a family's member
is `LATENCY_P.of("99")`, a swept level's name `TPS.at(16)`. The metric registry
(virtbench.metrics) puts the declarations together; see its docstring for how it is read.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from virtbench.store.records import Direction, Sample

Summary = Literal["median", "series", "fit"]
PlotKind = Literal["boot", "latency", "concurrency", "scalability", "density", "resources"]
DesmetKind = Literal["boot", "lower", "higher"]


@dataclass(frozen=True)
class Metric:
    """One figure, or a family of figures when `name` is a pattern.

    name         the name as stored, or an fnmatch pattern for a family ("*.requests_per_s")
    unit         as stored ("" where samples carry their own: patterns of a family, DEFAULT)
    direction    "lower" or "higher": which way is better (None where samples say)
    includes     what the figure includes: from which event to which, by which clock
    lower_bound  the smallest value it can take (None: no bound)
    resolution   the smallest difference its method can tell, in `unit` (None: unknown)
    repeated     True: repetitions measure one thing again, so their CV says how steady it
                 is (adaptive repetition's target); False: host state, one-off figures,
                 per-step series, side figures kept out of that target
    summary      "median": summarised as a distribution (median, 95% CI, CV);
                 "series": per-point values shown at their point, never summarised;
                 "fit": the slope of the series `fits` against its background count,
                 computed when read (report/fits.py), never stored
    fits         for "fit": the series metric whose slope it is
    compared     the report compares runtimes on it: tests, DESMET scores, spread warnings
    ab_compared  `virtbench compare` tests it between its two sides: more than `compared`,
                 as a run that reached fewer instances or kept a bigger image regressed
    plot         the plot kind of report/plots.py that draws it (None: none does)
    desmet       how DESMET scores it: "boot" (against the boot baseline), else its direction
    pile_up      taken once per instance as instances pile up: the background count is where
                 in the pile-up, not a condition, so all of a run's values are one group
    headline     a worker's own result, which scalability and isolation follow (the first
                 one recorded); False for side figures (teardown, the host, launches)
    side         recorded beside a measurement, even one that failed (a teardown, a launch
                 of a pile-up, how far it got, the host, an image's size): a runtime whose
                 only figures are side ones measured nothing
    workload     the workload whose figure it is ("" for any: the experiments' own)
    label        the few words a person reads for it, in tables, answers and plots ("time
                 to exit", "memory per instance"); a pattern's has one `{}` per wildcard
                 of its name, filled with what the wildcard matched ("{} requests/s" of
                 "*.requests_per_s" reads "get requests/s"); its definition is `includes`
    """

    name: str
    unit: str
    direction: Direction | None
    includes: str
    lower_bound: float | None = 0.0
    resolution: float | None = None
    repeated: bool = True
    summary: Summary = "median"
    compared: bool = True
    ab_compared: bool = True
    plot: PlotKind | None = None
    desmet: DesmetKind | None = None
    pile_up: bool = False
    headline: bool = True
    side: bool = False
    workload: str = ""
    label: str = ""
    fits: str = ""

    def __post_init__(self) -> None:
        if self.desmet is None:  # scored in its own direction unless declared boot-like
            object.__setattr__(self, "desmet", self.direction)

    @property
    def is_pattern(self) -> bool:
        return any(c in self.name for c in "*?[")

    def of(self, *parts: object) -> Metric:
        """The member of this family whose name has `parts` in place of its wildcards, in
        order: `LATENCY_P.of(99)` is `latency_p99`, declared as its family is."""
        if not self.is_pattern or len(parts) != self.name.count("*") + self.name.count("?"):
            raise ValueError(f"{self.name}: {len(parts)} parts for its wildcards")
        it = iter(str(p) for p in parts)
        name = "".join(next(it) if c in "*?" else c for c in self.name)
        return dataclasses.replace(self, name=name)

    def at(self, level: object) -> Metric:
        """This figure measured at a swept `level`, stored as `<name>@<level>` (`tps@16`,
        `snapshot.restore@64MiB`); itself where `level` is None."""
        return self if level is None else dataclasses.replace(self, name=f"{self.name}@{level}")

    def sample(self, value: float | None, **labels: Any) -> Sample:
        """A sample of this figure, its name, unit and direction as declared; `labels`
        are the sample's other fields (experiment, runtime, error, params...). A family
        (a pattern) is recorded through its member (`of`); a figure declared with its
        unit and direction open takes them from `labels`."""
        if self.is_pattern:
            raise ValueError(f"{self.name} is a family: record one of its members (of)")
        if self.direction is None:  # open: the sample says
            return Sample(metric=self.name, value=value, **labels)
        return Sample(
            metric=self.name, value=value, unit=self.unit, direction=self.direction, **labels
        )

    def label_of(self, name: str) -> str:
        """What a person reads for figure `name` (a level suffix ignored), which this
        declares: its label, a pattern's wildcards filled with what they matched; the
        name with its experiment's prefix and underscores dropped where it has none."""
        base = name.partition("@")[0]
        if not self.label:  # an experiment's figure without its prefix, words apart
            own = not self.workload and "." in base
            return (base.partition(".")[2] if own else base).replace("_", " ")
        if not self.is_pattern:
            return self.label
        found = _wildcards(self.name).fullmatch(base)
        parts = [p.replace("_", " ") for p in found.groups()] if found else []
        return self.label.format(*parts) if len(parts) == self.label.count("{}") else self.label


@functools.lru_cache(maxsize=512)
def _wildcards(pattern: str) -> re.Pattern[str]:
    """`pattern` (fnmatch's `*` and `?`) as a regular expression with a group for each
    wildcard, in order."""
    out = ""
    for c in pattern:
        out += "(.*)" if c == "*" else "(.)" if c == "?" else re.escape(c)
    return re.compile(out)


def first_match(declared: Iterable[Metric], name: str) -> Metric | None:
    """The declaration of `name` among `declared`: an exact name first, then the first
    pattern that matches (fnmatch: `*` matches dots too); None when neither does."""
    declared = tuple(declared)
    for m in declared:
        if not m.is_pattern and m.name == name:
            return m
    return next((m for m in declared if m.is_pattern and fnmatch.fnmatchcase(name, m.name)), None)


NS_MS = 1e-6  # a host monotonic clock read in ns, in ms
KIB_MIB = 1 / 1024  # /proc reports kB
CHARGE_BATCH_MIB = 64 * 4096 / 2**20  # memcg charges in batches of 64 pages (4 KiB pages)
OPEN: dict[str, Any] = {"unit": "", "direction": None, "lower_bound": None}  # samples say


SPAWN = "spawn call issued -> "  # how a boot-like figure's interval begins
MONO = ", host monotonic clock"  # how it is timed


def boot_metric(name: str, includes: str, **kw: Any) -> Metric:
    """A boot figure: ms on the host's monotonic clock, drawn with boot, scored as boot."""
    kw = {"unit": "ms", "direction": "lower", "resolution": NS_MS, **kw}
    return Metric(name, includes=includes, plot="boot", desmet="boot", **kw)


def pile_metric(
    name: str, unit: str, direction: Direction | None, includes: str, **kw: Any
) -> Metric:
    """A figure of a pile-up (density, scalability): no headline of its own."""
    return Metric(name, unit, direction, includes, pile_up=True, headline=False, **kw)


# a figure of the host at each step of a pile-up: a series, not repeated or compared
STEP: dict[str, Any] = {
    "resolution": KIB_MIB,
    "repeated": False,
    "summary": "series",
    "compared": False,
    "ab_compared": False,
}
