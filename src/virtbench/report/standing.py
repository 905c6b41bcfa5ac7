"""An answer as a person reads it: the runtimes ranked best first, each figure with its
95% CI, how many times worse than the best each one is (with that ratio's 95% CI), how
many times native's figure it is where native ran, and one sentence per neighbouring
pair the ratio's CI separates ("crun starts 1.56x (1.45-1.68) faster than runc").

Native is the reference line, not a contestant: where it ran beside two or more other
runtimes it is shown apart, and "the best" is the best of the others (or the runtime a
user names as the baseline).

The ratio of two figures, each a median of independent units (repetitions, instances),
is a percentile bootstrap of both medians (analysis/stats.slowdown_ci). Where a figure is
no median of values the answer holds (a fitted slope, a pooled tail) the ratio's CI is
read from the two CIs as normal ones on the log scale (their errors added in quadrature).
A figure on a scale where a ratio means nothing (a slowdown in %, a slope that can be
negative) is compared by its difference instead. No ratio is taken to a figure within
its method's resolution of zero, or whose CI reaches where the quantity cannot be.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from rich.table import Table

from virtbench.analysis.stats import MIN_UNITS, Z, slowdown_ci
from virtbench.report.cells import (
    CI_HEADER,
    MIXED_HEADER,
    RANGE_HEADER,
    add_columns,
    fmt,
    quantity,
    refusal,
    scaled,
    span,
)

REFERENCE = "native"  # the reference line of every answer where it ran
Scale = Literal["ratio", "difference"]


@dataclass(frozen=True, eq=False)
class Standing:
    """One runtime's figure for a question.

    value, low, high  the figure and its 95% CI (nan: none)
    floor        the least the quantity can be (memory per instance: 0; nan: no bound)
    values, units  the values `value` is the median of, and each one's independent unit
                 (None: the figure is no median of values: a slope, a pooled tail)
    p95          the 95th percentile with its CI, where the experiment has tails
    ok, total    measurements that succeeded, of all (total 0: not counted)
    no_ci        what stands in its CI's place where it has none (the range of fewer
                 than 5 units, "2 batches"); "" says "n/a"
    """

    runtime: str
    value: float
    low: float = math.nan
    high: float = math.nan
    floor: float = math.nan
    values: np.ndarray | None = None
    units: np.ndarray | None = None
    p95: tuple[float, float, float] | None = None
    ok: int = 0
    total: int = 0
    no_ci: str = ""

    @property
    def has_ci(self) -> bool:
        return not math.isnan(self.low)

    @property
    def told_from_floor(self) -> bool:
        """Its CI stays above the least the quantity can be (True where unbounded)."""
        return math.isnan(self.floor) or not self.has_ci or self.low > self.floor


@dataclass(frozen=True)
class Factor:
    """How B stands against A: B's figure in A's (a ratio, 1.56 = 1.56x; or a
    difference in the figure's unit), with its 95% CI; `why` says why there is none."""

    point: float = math.nan
    low: float = math.nan
    high: float = math.nan
    why: str = ""

    @property
    def apart(self) -> bool:
        """Its CI excludes "no difference" (1 for a ratio, 0 for a difference)."""
        return not math.isnan(self.low) and self.low > self.neutral

    neutral: float = 1.0


@dataclass
class Answer:
    """One question the run answers, its runtimes ranked best first.

    question     what is asked, in words ("Fastest to start")
    measure      the figure that answers it, as a person reads it ("time to ready (sleep)")
    unit         the figure's unit
    ranked       the runtimes compared, best first (native apart: `reference`)
    lower_better which way is better
    metric, workload  the figure's id (exports, --ids)
    sentence     how one runtime beats the next: "{a}", "{b}" and "{x}" filled in
    scale        "ratio" or "difference" (a slowdown, a slope: no ratio means anything)
    reference    native's figure, where it ran beside two or more others
    baseline     the runtime the others are set against (default: the best)
    note         what else the question says (success rates, liveness)
    emulated     the runtimes measured under emulation (QEMU TCG): marked wherever named
    figure       what each runtime's figure is, as its column reads ("median", "slope")
    """

    question: str
    measure: str
    unit: str
    ranked: list[Standing]
    lower_better: bool = True
    metric: str = ""
    workload: str = ""
    sentence: str = "{a} is {x} better than {b}"
    scale: Scale = "ratio"
    reference: Standing | None = None
    baseline: str = ""
    note: str = ""
    emulated: frozenset[str] = frozenset()
    figure: str = "median"
    _factors: dict[tuple[str, str], Factor] = field(default_factory=dict, repr=False)

    @property
    def best(self) -> Standing:
        """What every runtime is set against: the baseline where named, else the best."""
        named = [s for s in self.everyone if s.runtime == self.baseline]
        return named[0] if named else self.ranked[0]

    @property
    def everyone(self) -> list[Standing]:
        return [*self.ranked, *([self.reference] if self.reference else [])]

    def factor(self, a: Standing, b: Standing) -> Factor:
        """How many times worse b is than a (ratio scale), or by how much (difference)."""
        key = (a.runtime, b.runtime)
        if key not in self._factors:
            self._factors[key] = (
                _ratio(self, a, b) if self.scale == "ratio" else _difference(self, a, b)
            )
        return self._factors[key]

    def of_reference(self, s: Standing) -> Factor:
        """`s`'s figure as a multiple of native's (the studies' overhead figure)."""
        if self.reference is None or self.scale != "ratio":
            return Factor(why="no native figure")
        key = ("of native", s.runtime)  # no runtime is named so
        if key not in self._factors:
            self._factors[key] = _ratio(self, self.reference, s, plain=True)
        return self._factors[key]

    def undecided(self) -> str:
        """What stands in place of sentences where there are none: why the order is not
        sure."""
        pairs = zip(self.ranked, self.ranked[1:], strict=False)
        if any(math.isnan(self.factor(a, b).low) for a, b in pairs):
            return "The order is not sure: some neighbours have no ratio with a 95% CI (see why)."
        none = "1" if self.scale == "ratio" else "0"
        return (
            "The order could be chance: between each runtime and the next, the 95% CI "
            f"includes {none} (no difference)."
        )

    def sentences(self) -> list[str]:
        """One per neighbouring pair the ratio's (or difference's) CI separates."""
        out = []
        for a, b in zip(self.ranked, self.ranked[1:], strict=False):
            f = self.factor(a, b)
            if f.apart:
                x = times(f) if self.scale == "ratio" else amount(f, self.unit).lstrip("+")
                out.append(self.sentence.format(a=self.named(a), b=self.named(b), x=x))
        return out

    def named(self, s: Standing) -> str:
        """A runtime's name as the answer says it: "(emulated)" after one measured under
        QEMU TCG."""
        return s.runtime + (" (emulated)" if s.runtime in self.emulated else "")


def ratio(x: float) -> str:
    """A ratio as hyperfine writes one: two decimals from 1 to 10 ("1.60"), else three
    significant digits ("13.2", "0.0759")."""
    return f"{x:.2f}" if 1 <= abs(x) < 10 else fmt(x)


def times(f: Factor) -> str:
    """`1.56x (1.45-1.68)`, or `1.56x` without a CI."""
    if math.isnan(f.point):
        return "n/a"
    ci = f" ({ratio(f.low)}{' to ' if f.low < 0 else '-'}{ratio(f.high)})"
    return f"{ratio(f.point)}x{ci if not math.isnan(f.low) else ''}"


def amount(f: Factor, unit: str) -> str:
    """`12.3 points (5.1-19.4)` of a difference."""
    if math.isnan(f.point):
        return "n/a"
    factor, shown = scaled(f.point, unit)  # memory as the tables show it: 451 KiB
    what = "points" if unit.startswith("%") else shown
    ci = f" ({span(f.low * factor, f.high * factor)})" if not math.isnan(f.low) else ""
    return f"{'+' if f.point > 0 else ''}{fmt(f.point * factor)} {what}{ci}"


def _direction(a: Answer) -> str:
    return "lower" if a.lower_better else "higher"


def _ratio(ans: Answer, a: Standing, b: Standing, plain: bool = False) -> Factor:
    """b against a: how many times worse (`plain`: b's figure over a's, whichever way is
    better), with its 95% CI; none (why) where a's figure is no base for a ratio."""
    why = _no_base(ans, a)
    if why:
        return Factor(why=why)
    if not b.told_from_floor or b.value <= 0:
        return Factor(why=f"{b.runtime}'s figure is not told from {fmt(b.floor)}")
    direction = "lower" if plain else _direction(ans)
    if a.values is not None and b.values is not None:
        point, lo, hi = slowdown_ci(a.values, b.values, direction, units_b=a.units, units_a=b.units)
        why = "" if not math.isnan(lo) else f"no ratio CI: fewer than {MIN_UNITS} runs a side"
        return Factor(point + 1, lo + 1, hi + 1, why)
    point = b.value / a.value if direction == "lower" else a.value / b.value
    lacking = next((x for x in (a, b) if not x.has_ci), None)
    if lacking is not None:
        said = lacking.no_ci.removeprefix("no CI: ")
        return Factor(point, why="no ratio CI: a figure without a CI" + (f" ({said})" * bool(said)))
    if min(a.low, b.low) <= 0:
        return Factor(point, why="no ratio CI: a figure's CI reaches 0")
    se = math.hypot(math.log(a.high / a.low), math.log(b.high / b.low)) / (2 * Z)
    return Factor(point, point * math.exp(-Z * se), point * math.exp(Z * se))


def _no_base(ans: Answer, a: Standing) -> str:
    """Why a's figure is no base for a ratio, or ""."""
    if not a.told_from_floor:
        return f"{a.runtime}'s figure is not told from {fmt(a.floor)}"
    if ans.metric:
        return refusal(ans.metric, ans.workload, a.value, a.runtime)
    return (
        f"{a.runtime}'s figure is {fmt(a.value)}: a ratio to it means nothing"
        if (a.value <= 0)
        else ""
    )


def _difference(ans: Answer, a: Standing, b: Standing) -> Factor:
    """How much worse b is than a, in the figure's unit, with its 95% CI: the two CIs
    read as normal ones (their half-widths added in quadrature)."""
    point = b.value - a.value if ans.lower_better else a.value - b.value
    if not (a.has_ci and b.has_ci):
        return Factor(point, why="no CI", neutral=0.0)
    half = math.hypot(a.high - a.low, b.high - b.low) / 2
    return Factor(point, point - half, point + half, neutral=0.0)


def ranked(
    question: str,
    measure: str,
    unit: str,
    found: list[Standing],
    lower_better: bool,
    **kw: object,
) -> list[Answer]:
    """The answer of the runtimes `found` (those with a figure), best first, native
    apart where two others ran; none where fewer than two runtimes have a figure."""
    found = [s for s in found if not math.isnan(s.value)]
    if len(found) < 2:  # one runtime answers no "which"
        return []
    found.sort(key=lambda s: s.value if lower_better else -s.value)
    others = [s for s in found if s.runtime != REFERENCE]
    reference = next((s for s in found if s.runtime == REFERENCE), None)
    if len(others) < 2:  # native and one other: the only comparison there is
        others, reference = found, None
    answer = Answer(question, measure, unit, others, lower_better, reference=reference, **kw)  # type: ignore[arg-type]  # kw: Answer's own fields, as callers name them
    return [answer]


def table(a: Answer, ids: bool = False) -> Table:
    """The answer as a table: runtime | figure | 95% CI | against the best (with its CI)
    | of native (where it ran) | p95 (where there are tails) | ok (where counted);
    `ids` adds the figure's id to its title."""
    best = a.best
    cols = ["runtime", a.figure, "95% CI", f"vs {best.runtime}"]
    native = a.reference is not None and a.scale == "ratio"
    tails = any(s.p95 is not None for s in a.everyone)
    counted = any(s.total for s in a.everyone)
    cols += ["x native"] * native + ["p95"] * tails + ["succeeded"] * counted
    named = f" [{a.metric}]" if ids and a.metric else ""
    t = Table(title=f"{a.question}: {a.measure}{named}", title_justify="left")
    add_columns(t, cols, ("runtime",))
    rows = [*a.ranked, *([a.reference] if a.reference and a.reference not in a.ranked else [])]
    t.columns[2].header = _interval_header(rows)
    for s in rows:
        cells = _cells(a, s, best)
        cells[1] = _interval_cell(cells[1], s, str(t.columns[2].header))
        cells += ["" if s is a.reference else _vs(a.of_reference(s), a)] * native
        cells += [_p95(s, a.unit)] * tails
        cells += [f"{s.ok}/{s.total}" if s.total else ""] * counted
        name = a.named(s) + (" (reference)" if s is a.reference else "")
        t.add_row(name, *cells)
    return t


def _interval_header(rows: list[Standing]) -> str:
    """What the interval column holds, so that no range ever stands under a CI's name
    (as cells.interval_column says): "95% CI", "range", or "interval" over both."""
    ranges = [s.no_ci.startswith(RANGE_HEADER) for s in rows if not s.has_ci]
    if not any(ranges):
        return CI_HEADER
    return RANGE_HEADER if all(ranges) and len(ranges) == len(rows) else MIXED_HEADER


def _interval_cell(cell: str, s: Standing, header: str) -> str:
    """The cell as its column's header has it: a range's word dropped under "range",
    a CI named under "interval"."""
    if header == RANGE_HEADER:
        return cell.removeprefix(f"{RANGE_HEADER} ")
    return f"{CI_HEADER} {cell}" if header == MIXED_HEADER and s.has_ci else cell


def _cells(a: Answer, s: Standing, best: Standing) -> list[str]:
    """A standing's figure, its CI and how it stands against the best."""
    value, ci = quantity(s.value, a.unit, s.low, s.high)
    if not s.has_ci and s.no_ci:
        ci = s.no_ci
    if not s.told_from_floor:
        upper = quantity(s.high, a.unit)[0]
        ci = f"up to {upper} (not told from {fmt(s.floor)})"
        if s.value < s.floor:  # a point below what can be (a slope under 0) is no figure
            value = f"< {upper}"
    if s is best:
        vs = "baseline" if s.runtime == a.baseline else "best"
    elif s is a.reference and best is not s:  # its standing is in the others' "x native"
        vs = ""
    else:
        vs = _vs(a.factor(best, s), a)
    return [value, ci, vs]


def _vs(f: Factor, a: Answer) -> str:
    if math.isnan(f.point):
        return "n/a"
    return times(f) if a.scale == "ratio" else amount(f, a.unit)


def _p95(s: Standing, unit: str) -> str:
    if s.p95 is None:
        return ""
    value, ci = quantity(s.p95[0], unit, s.p95[1], s.p95[2])
    return f"{value} ({ci})" if ci != "n/a" else value


def notes(a: Answer) -> list[str]:
    """Why a cell says n/a (each reason once), and the question's own note."""
    why = []
    best = a.best
    for s in a.everyone:
        if s is not best:
            why.append(a.factor(best, s).why)
        if a.reference is not None and s is not a.reference:
            why.append(a.of_reference(s).why)
    said = [w for w in dict.fromkeys(why) if w and not w.startswith("no native")]
    emulated = [s.runtime for s in a.everyone if s.runtime in a.emulated]
    if emulated:  # beside others measured on the hardware, theirs are no performance
        said.append(
            f"emulated (QEMU TCG): {', '.join(emulated)}: they work as shown; their "
            "figures are not their speed on hardware"
        )
    return ([a.note] if a.note else []) + said
