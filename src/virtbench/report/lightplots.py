"""The boot figures drawn without matplotlib (report/svgplot.py), for the site's run pages:
the same figures as plots.boot (every sample over its box, beside the CDF) and
plots_studies.startup (each runtime's median with its 95% CI), the same data, scales
and words. A report drawn by `virtbench report` keeps matplotlib's."""

from __future__ import annotations

import itertools
import math

import numpy as np

from virtbench import metrics
from virtbench.analysis.stats import Summary, quantile_of
from virtbench.report.plotkit import slugify, spread_wide
from virtbench.report.plots import boot_groups
from virtbench.report.plots_studies import by_unit, startup_panels
from virtbench.report.svgplot import (
    TAB10,
    Axis,
    LightPlot,
    Panel,
    colour_of,
    figure,
    panels,
)
from virtbench.store.records import Sample


def boot(samples: list[Sample], order: list[str]) -> list[LightPlot]:
    """Per boot figure: every sample per runtime over its box (left) and the CDF (right)."""
    plots = []
    colour = colour_of(order)
    for metric, unit, runtimes, data in boot_groups(samples, order):
        label = metrics.label(metric)
        every = [v for values in data for v in values]
        log = spread_wide(every)
        box, cdf = panels(2)
        up = Axis.of(every, box.y + box.h, box.y, log, False)
        across = Axis.of(every, cdf.x, cdf.x + cdf.w, log, False)
        _boxes(box, data, runtimes, colour, up)
        box.y_axis(up, unit, f"{label} ({unit})")
        _cdf(cdf, data, runtimes, colour, across)
        cdf.x_axis(across, unit, f"{label} ({unit})")
        cdf.legend([(r, colour[r]) for r in runtimes])
        heading = f"{label}: every sample per runtime"
        name = f"boot-{slugify(metric)}"
        plots.append(figure(name, f"{label}: every sample", heading, [box, cdf]))
    return plots


def _boxes(
    p: Panel, data: list[list[float]], runtimes: list[str], colour: dict[str, str], y: Axis
) -> None:
    """Each runtime's box (quartiles, whiskers to the furthest value within 1.5 IQR,
    as matplotlib's) under its samples, spread sideways so that none hides another."""
    xs = p.categories(runtimes)
    half = 0.25 * p.w / len(runtimes)
    rng = np.random.default_rng(0)
    for x, values, r in zip(xs, data, runtimes, strict=True):
        v = np.sort(np.asarray(values))
        q1, med, q3 = (quantile_of(v, q) for q in (0.25, 0.5, 0.75))  # v is sorted
        low = float(v[v >= q1 - 1.5 * (q3 - q1)].min())
        high = float(v[v <= q3 + 1.5 * (q3 - q1)].max())
        stroke = 'stroke="#000" stroke-width="1"'
        whiskers = _segment(x, y.at(low), x, y.at(q1)) + _segment(x, y.at(q3), x, y.at(high))
        whiskers += "".join(
            _segment(x - half / 2, y.at(v), x + half / 2, y.at(v)) for v in (low, high)
        )
        p.add(f"<g {stroke}>{whiskers}</g>")
        top, height = y.at(q3), max(y.at(q1) - y.at(q3), 0.5)
        p.add(
            f'<rect x="{x - half:.1f}" y="{top:.1f}" width="{2 * half:.1f}" height="{height:.1f}" '
            f'fill="{colour[r]}" fill-opacity="0.35" {stroke}/>'
        )
        median = _segment(x - half, y.at(med), x + half, y.at(med))
        p.add(f'<g stroke="{TAB10[1]}" stroke-width="1.5">{median}</g>')
        jitter = rng.uniform(-0.12, 0.12, v.size) * p.w / len(runtimes)
        spots = list(zip((x + jitter).tolist(), y.all_at(np.asarray(values)), strict=True))
        p.taken += spots
        dots = "".join(map('<circle cx="%.1f" cy="%.1f" r="1.6"/>'.__mod__, spots))
        p.add(f'<g fill="{colour[r]}">{dots}</g>')
    p.frame()


def _cdf(
    p: Panel, data: list[list[float]], runtimes: list[str], colour: dict[str, str], x: Axis
) -> None:
    """Each runtime's empirical CDF as a step line, and the fraction axis."""
    frac = Axis(0.0, 1.0, p.y + p.h, p.y)
    p.y_axis(frac, "", "fraction of samples")
    for values, r in zip(data, runtimes, strict=True):
        v = np.sort(np.asarray(values))
        n = v.size
        ups = frac.all_at(np.arange(1, n + 1) / n)
        spots = list(zip(x.all_at(v), ups, strict=True))
        p.taken += spots + [(b[0], a[1]) for a, b in itertools.pairwise(spots)]  # steps' corners
        path = [f"M{spots[0][0]:.1f},{spots[0][1]:.1f}"]
        path += map("H%.1fV%.1f".__mod__, spots[1:])
        p.add(f'<path d="{"".join(path)}" fill="none" stroke="{colour[r]}" stroke-width="1.5"/>')
    p.frame()


def startup(samples: list[Sample], order: list[str]) -> list[LightPlot]:
    """S3's startup figure: every headline and side boot figure, each runtime's median
    with its 95% CI as a dot and whisker; the teardown beside it, where the run timed it."""
    runtimes, chosen = startup_panels(samples, order)
    if not chosen:
        return []
    drawn = panels(len(chosen))
    for p, (title, part) in zip(drawn, chosen, strict=True):
        _medians(p, part, runtimes)
        p.title(title)
    heading = "Startup time per runtime: median and 95% CI"
    return [figure("startup-medians", "Startup time per runtime (median, 95% CI)", heading, drawn)]


def _medians(p: Panel, ok: list[Sample], runtimes: list[str]) -> None:
    """One panel: each metric's medians and CIs per runtime, side by side."""
    names = sorted({s.metric for s in ok}, key=lambda m: (not metrics.lookup(m).headline, m))
    unit = ok[0].unit
    colours = colour_of(names)
    summary = by_unit(ok)
    sts = {m: [summary(r, m) for r in runtimes] for m in names}
    medians = [st.median for m in names for st in sts[m] if st.n]
    reach = medians + [v for m in names for st in sts[m] if st.n for v in _ci(st)]
    log = spread_wide(medians) and min(reach) > 0
    y = Axis.of(reach, p.y + p.h, p.y, log, zero=not log)
    p.y_axis(y, unit, f"time ({unit})")
    xs = p.categories(runtimes)
    step = 0.7 * p.w / len(runtimes) / max(1, len(names))
    for j, m in enumerate(names):
        shift = (j - (len(names) - 1) / 2) * step
        marks = []
        for x, st in zip(xs, sts[m], strict=True):
            if not st.n:
                continue
            cx, ci = x + shift, _ci(st)
            if ci:
                marks.append(_segment(cx, y.at(ci[0]), cx, y.at(ci[1])))
                marks += [_segment(cx - 3, y.at(v), cx + 3, y.at(v)) for v in ci]
            marks.append(f'<circle cx="{cx:.1f}" cy="{y.at(st.median):.1f}" r="3.5"/>')
            p.taken.append((cx, y.at(st.median)))
        p.add(f'<g fill="{colours[m]}" stroke="{colours[m]}">{"".join(marks)}</g>')
    p.frame()
    p.legend([(metrics.label(m), colours[m]) for m in names], marker="dot")


def _segment(x1: float, y1: float, x2: float, y2: float) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}"/>'


def _ci(st: Summary) -> tuple[float, float] | tuple[()]:
    return () if math.isnan(st.ci_low) else (st.ci_low, st.ci_high)
