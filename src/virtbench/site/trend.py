"""An entry's trends: each headline figure of each runtime over the entry's completed
runs on one testbed (never two testbeds on one line), as the run files (site/data.py)
hold them: the median with its 95% CI (or, with too few units for one, the range, said
so) per run, and a change marked only where `compare`'s verdict against the run before
says so. Drawn as small inline SVG charts, each on its own scale."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

from virtbench import metrics
from virtbench.report.cells import fmt, quantity, scaled
from virtbench.site.data import FLAGGED, KEY_FIELDS

W, H, PAD, LEFT = 320, 72, 6, 52  # a chart's drawing box, in its own units


@dataclass
class Point:
    run: str
    created: float
    median: float
    low: float  # CI, or the range where `ci` is False; nan: neither
    high: float
    ci: bool
    verdict: str = ""  # compare's, where it flags a change (FLAGGED)
    change: str = ""  # its ratio in words


@dataclass
class Series:
    figure: str  # the condition without its runtime, in words
    runtime: str
    unit: str
    emulated: bool
    floor: float = math.nan  # the least the quantity can be (memory: 0; nan: no bound)
    points: list[Point] = field(default_factory=list)
    rank: int = 0  # its figure's place in the registry: the answers' order (boot first)

    def low(self, p: Point) -> float:
        """A point's lower bound as drawn: never below what the quantity can be."""
        return p.low if math.isnan(self.floor) else max(p.low, self.floor)

    @property
    def flags(self) -> list[Point]:
        return [p for p in self.points if p.verdict]


def _num(x: Any) -> float:
    return float(x) if isinstance(x, int | float) else math.nan


def _key(d: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(d[k]) for k in KEY_FIELDS)


def _changes(doc: dict[str, Any]) -> dict[tuple[str, ...], dict[str, Any]]:
    prev = doc.get("previous") or {}
    return {_key(v): v for v in prev.get("verdicts", []) if v["verdict"] in FLAGGED}


def _point(doc: dict[str, Any], s: dict[str, Any], flag: dict[str, Any] | None) -> Point:
    ci = s["ci_low"] is not None
    low, high = (s["ci_low"], s["ci_high"]) if ci else (s["minimum"], s["maximum"])
    change = ""
    if flag:
        t = flag["times"]
        change = f"{flag['verdict']}, {_ratio(t['point'], t['low'], t['high'])}"
    return Point(
        doc["run"]["id"],
        doc["run"]["created"],
        _num(s["median"]),
        _num(low),
        _num(high),
        ci,
        flag["verdict"] if flag else "",
        change,
    )


def _ratio(x: Any, lo: Any, hi: Any) -> str:
    """compare's ratio to the run before, which reads above 1 as worse either way."""
    if not isinstance(x, int | float):
        return "no ratio"
    ci = f" ({lo:.2f}-{hi:.2f})" if isinstance(lo, int | float) else ""
    return f"{x:.2f}x{ci} the run before"


def _fit_point(doc: dict[str, Any], s: dict[str, Any], flag: dict[str, Any] | None) -> Point:
    """A fitted cost as a point: its slope and the slope's CI (no range stands in)."""
    as_summary = {"median": s["slope"], "minimum": None, "maximum": None}
    return _point(doc, {**s, **as_summary}, flag)


def series(docs: list[dict[str, Any]]) -> list[Series]:
    """Every headline figure's series per runtime (medians, and costs per instance),
    from the entry's run files (oldest first), by figure (in the answers' order, the
    registry's) then runtime."""
    out: dict[tuple[str, ...], Series] = {}
    order = {id(m): i for i, m in enumerate(metrics.registry())}  # the answers' order
    for doc in docs:
        flags = _changes(doc)
        rows = [(s, _point) for s in doc["summaries"]]
        rows += [(s, _fit_point) for s in doc.get("fits", [])]
        for s, point in rows:
            if not s["headline"]:
                continue
            key = _key(s)
            if key not in out:
                m = metrics.lookup(s["metric"], s["workload"])
                floor = math.nan if m.lower_bound is None else float(m.lower_bound)
                rank = order.get(id(m), len(order))
                out[key] = Series(s["figure"], s["runtime"], s["unit"], False, floor, rank=rank)
            out[key].emulated |= s["emulated"]  # in any run: its line is marked
            out[key].points.append(point(doc, s, flags.get(key)))
    return [out[k] for k in sorted(out, key=lambda k: (out[k].rank, out[k].figure, out[k].runtime))]


def interval(s: Series, p: Point) -> str:
    """A point's interval in words: "95% CI 17.1-18 ms", "range 3-7 us" (too few units
    for a CI), or "up to 641 KiB (not told from 0)" where the CI reaches what the
    quantity cannot go below."""
    if math.isnan(p.low) or math.isnan(p.high):
        return "no interval"
    if p.ci and not math.isnan(s.floor) and p.low <= s.floor:
        return f"up to {quantity(p.high, s.unit)[0]} (not told from {fmt(s.floor)})"
    span = quantity(p.median, s.unit, p.low, p.high)[1]
    return f"95% CI {span}" if p.ci else f"range {span}"


def latest(s: Series) -> tuple[str, str, str]:
    """The last point's run, its median and its interval, in words."""
    p = s.points[-1]
    return p.run, quantity(p.median, s.unit)[0], interval(s, p)


def svg(s: Series, n_runs: int, index: dict[str, int]) -> str:
    """The series as a chart: x is the run's place among the entry's `n_runs` runs
    (`index`), y the figure on the series' own scale; a band for each interval, a dot
    per median, a ring where a change is flagged; every point names its run."""
    lows = [s.low(p) for p in s.points if not math.isnan(p.low)]
    highs = [p.high for p in s.points if not math.isnan(p.high)]
    meds = [p.median for p in s.points if not math.isnan(p.median)]
    if not meds:
        return ""
    lo, hi = min([*lows, *meds]), max([*highs, *meds])
    span = (hi - lo) or abs(hi) or 1.0
    lo, hi = lo - span * 0.05, hi + span * 0.05
    lo = lo if math.isnan(s.floor) else max(lo, s.floor)

    def x(p: Point) -> float:
        return LEFT + (W - LEFT - PAD) * (index[p.run] / max(1, n_runs - 1))

    def y(v: float) -> float:
        return PAD + (H - 2 * PAD) * (1 - (v - lo) / (hi - lo))

    parts = [_axis(s, lo, hi)]
    for p in s.points:
        if not math.isnan(p.low):
            dash = "" if p.ci else ' stroke-dasharray="2 2"'
            parts.append(
                f'<line x1="{x(p):.1f}" x2="{x(p):.1f}" y1="{y(s.low(p)):.1f}" '
                f'y2="{y(p.high):.1f}" class="ci"{dash}/>'
            )
    line = " ".join(f"{x(p):.1f},{y(p.median):.1f}" for p in s.points if not math.isnan(p.median))
    parts.append(f'<polyline points="{line}" class="median"/>')
    parts += [_dot(s, p, x(p), y(p.median)) for p in s.points if not math.isnan(p.median)]
    label = html.escape(f"{s.figure} on {s.runtime}", quote=True)
    return (
        f'<svg class="trend" viewBox="0 0 {W} {H}" role="img" aria-label="{label}">'
        + "".join(parts)
        + "</svg>"
    )


def _axis(s: Series, lo: float, hi: float) -> str:
    """The chart's top and bottom values, both in the unit its top needs."""
    factor, shown = scaled(hi, s.unit)
    top, bottom = (f"{fmt(v * factor)} {shown}".strip() for v in (hi, lo))
    return (
        f'<text x="{LEFT - 6}" y="{PAD + 4}" class="tick">{html.escape(top)}</text>'
        f'<text x="{LEFT - 6}" y="{H - PAD}" class="tick">{html.escape(bottom)}</text>'
        f'<line x1="{LEFT - 3}" x2="{LEFT - 3}" y1="{PAD}" y2="{H - PAD}" class="axis"/>'
    )


def _dot(s: Series, p: Point, cx: float, cy: float) -> str:
    value = quantity(p.median, s.unit)[0]
    tip = f"run {p.run}: {value} ({interval(s, p)})" + (f"; {p.change}" if p.change else "")
    mark = f" flag {p.verdict}" if p.verdict else ""
    r = 4.5 if p.verdict else 2.5
    return (
        f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r}" class="dot{mark}">'
        f"<title>{html.escape(tip)}</title></circle>"
    )


def flagged(doc: dict[str, Any]) -> dict[str, int]:
    """How many of the run's conditions compare flagged against the run before, by
    verdict (worse, better, failed), of all it compared (not only the headline ones)."""
    out: dict[str, int] = {}
    for v in _changes(doc).values():
        out[v["verdict"]] = out.get(v["verdict"], 0) + 1
    return out


def unflagged(doc: dict[str, Any]) -> str:
    """The rest of compare's verdicts, in words: "of 379 compared: 12 no change, 241 too
    few, 126 no ratio" (too few: no test of so few units could reach 5%)."""
    verdicts = [v["verdict"] for v in (doc.get("previous") or {}).get("verdicts", [])]
    rest = {v: verdicts.count(v) for v in dict.fromkeys(verdicts) if v not in FLAGGED}
    if not verdicts:
        return ""
    words = ", ".join(f"{n} {v}" for v, n in sorted(rest.items()))
    return f"of {len(verdicts)} compared: {words}" if words else f"of {len(verdicts)} compared"
