"""Plots of a run (matplotlib, Agg): each a `Plot` that saves as PNG and SVG, or inlines
as SVG in the HTML report.

  boot         per boot metric: box plot with every sample (left) and CDF (right)
  latency      per latency test: box plot of each repetition's median round trip, and
               the CDF its percentiles (p50..p99.9) give, per runtime
  concurrency  throughput (or latency) against the workload's level (connections,
               clients, threads): median with its 95% CI per runtime
  scalability  the worker's figure against background instances, normalised to the
               first point, mean +- SD band, with host CPU idle, MemAvailable and free swap
               normalised the same way on the same axis (as S1's figures)
  isolation    per runtime, bars of the worker's median under baseline and every
               attacker x placement, with 95% CI error bars
  density      memory per instance against instances running (PSS of each new instance,
               and host MemAvailable drop per instance)
Warm-ups and failed samples are never plotted.
"""

from __future__ import annotations

import io
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

from virtbench import metrics
from virtbench.records import Sample
from virtbench.report.tables import worker_metric
from virtbench.stats import summarize

STYLE = {
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text: smaller, searchable
    "svg.hashsalt": "virtbench",  # the same data gives the same file
}
COLOURS = plt.get_cmap("tab10").colors
MAX_PER_KIND = 16  # a run with 100 metrics gets the first 16 of each kind, not 100 plots


@dataclass
class Plot:
    name: str  # file stem, e.g. "boot-spawn_to_exit"
    title: str
    fig: Figure

    def save(self, directory: Path) -> list[Path]:
        directory.mkdir(parents=True, exist_ok=True)
        out = []
        with plt.rc_context(STYLE):  # svg.* settings are read when saving
            for ext in ("png", "svg"):
                path = directory / f"{self.name}.{ext}"
                self.fig.savefig(path, bbox_inches="tight", metadata=_metadata(ext))
                out.append(path)
        return out

    def svg(self, scope: str = "") -> str:
        """The figure as an inline <svg> element, its ids prefixed (by `scope`, e.g. the
        run id, and the plot's name) so that several plots in one page never share one."""
        buf = io.StringIO()
        with plt.rc_context(STYLE):
            self.fig.savefig(buf, format="svg", bbox_inches="tight", metadata=_metadata("svg"))
        text = buf.getvalue()
        text = text[text.index("<svg") :]
        prefix = re.sub(r"[^a-zA-Z0-9]", "-", f"{scope}-{self.name}" if scope else self.name) + "-"
        text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}\1"', text)
        text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}\1)", text)
        return re.sub(r'href="#([^"]+)"', rf'href="#{prefix}\1"', text)

    def close(self) -> None:
        plt.close(self.fig)


def _metadata(ext: str) -> dict[str, str | None]:
    return {"Date": None} if ext == "svg" else {"Software": "virtbench"}


def _colour(order: list[str]) -> Callable[[str], tuple[float, ...]]:
    return lambda r: COLOURS[order.index(r) % len(COLOURS)] if r in order else COLOURS[-1]


def _ok(samples: list[Sample]) -> list[Sample]:
    return [s for s in samples if not s.warmup and not s.error and s.value is not None]


def _runtimes(samples: list[Sample], order: list[str]) -> list[str]:
    have = {s.runtime for s in samples}
    return [r for r in order if r in have] + sorted(have - set(order))


def _figure(title: str, ncols: int = 1, width: float = 6.4) -> tuple[Figure, list]:
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols if ncols > 1 else width, 3.8),
                             squeeze=False)  # fmt: skip
    fig.suptitle(title, fontsize=10)
    return fig, list(axes[0])


def _drawn(s: Sample, kind: metrics.PlotKind) -> bool:
    """Does the registry have plot `kind` draw this sample's metric?"""
    return metrics.lookup(s.metric, s.workload).plot == kind


def boot(samples: list[Sample], order: list[str]) -> list[Plot]:
    ok = [s for s in _ok(samples) if s.experiment == "boot" and _drawn(s, "boot")]
    plots = []
    for metric in sorted({s.metric for s in ok}):
        mine = [s for s in ok if s.metric == metric]
        runtimes = _runtimes(mine, order)
        colour = _colour(order)
        unit = mine[0].unit
        fig, (box, cdf) = _figure(f"{metric} ({unit}): distribution per runtime", 2, 4.2)
        data = [[s.value for s in mine if s.runtime == r] for r in runtimes]
        parts = box.boxplot(data, tick_labels=runtimes, showfliers=False, patch_artist=True)
        for patch, r in zip(parts["boxes"], runtimes, strict=True):
            patch.set(facecolor=colour(r), alpha=0.35)
        rng = np.random.default_rng(0)
        for i, (values, r) in enumerate(zip(data, runtimes, strict=True)):
            x = i + 1 + rng.uniform(-0.12, 0.12, len(values))
            box.scatter(x, values, s=8, color=colour(r), zorder=3)
        box.set_ylabel(unit)
        box.tick_params(axis="x", labelrotation=30)
        for values, r in zip(data, runtimes, strict=True):
            v = np.sort(values)
            cdf.step(v, np.arange(1, len(v) + 1) / len(v), where="post", label=r, color=colour(r))
        cdf.set_xlabel(unit)
        cdf.set_ylabel("fraction of samples")
        if max(max(v) for v in data) / max(min(min(v) for v in data), 1e-9) > 20:
            box.set_yscale("log")
            cdf.set_xscale("log")
        cdf.legend(fontsize=7)
        plots.append(Plot(f"boot-{_slug(metric)}", f"boot: {metric}", fig))
    return plots


PERCENTILE = re.compile(r"^(?P<test>.+)\.rtt_p(?P<p>\d+)$")


def latency(samples: list[Sample], order: list[str]) -> list[Plot]:
    """Per request-response test of the latency workload: the median round trip of each
    repetition as a box plot (left), and the distribution of round trips within a run as
    the CDF its percentiles give (right: median over repetitions, min-max bars; the
    fraction axis stretches the tail, p50 .. p99.9)."""
    ok = [s for s in _ok(samples) if s.experiment == "throughput" and _drawn(s, "latency")]
    tests: dict[str, list[tuple[float, Sample]]] = defaultdict(list)
    for s in ok:
        m = PERCENTILE.match(s.metric)
        if m:
            digits = m["p"]
            pct = float(digits) if len(digits) <= 2 else float(digits) / 10 ** (len(digits) - 2)
            tests[f"{s.workload}: {m['test']}"].append((pct, s))
    plots = []
    colour = _colour(order)
    for test in sorted(tests)[:MAX_PER_KIND]:
        points = tests[test]
        unit = points[0][1].unit
        runtimes = _runtimes([s for _, s in points], order)
        fig, (box, cdf) = _figure(f"{test} round trip ({unit})", 2, 4.2)
        p50 = [[s.value for p, s in points if p == 50 and s.runtime == r] for r in runtimes]
        parts = box.boxplot(p50, tick_labels=runtimes, showfliers=False, patch_artist=True)
        for patch, r in zip(parts["boxes"], runtimes, strict=True):
            patch.set(facecolor=colour(r), alpha=0.35)
        box.set_title("median round trip per repetition", fontsize=9)
        box.set_ylabel(unit)
        box.tick_params(axis="x", labelrotation=30)
        for r in runtimes:
            pcts = sorted({p for p, s in points if s.runtime == r})
            med, lo, hi = [], [], []
            for p in pcts:
                vals = [s.value for q, s in points if q == p and s.runtime == r]
                med.append(float(np.median(vals)))
                lo.append(med[-1] - min(vals))
                hi.append(max(vals) - med[-1])
            cdf.errorbar(med, [_pct_x(p) for p in pcts], xerr=[lo, hi], marker="o", capsize=3,
                         label=r, color=colour(r))  # fmt: skip
        ticks = sorted({p for p, _ in points})
        cdf.set_yticks([_pct_x(p) for p in ticks], [f"{p:g}%" for p in ticks])
        cdf.set_title("within a run: CDF from its percentiles", fontsize=9)
        cdf.set_xlabel(unit)
        cdf.set_ylabel("fraction of requests")
        if (
            max(v for _, s in points for v in [s.value])
            / max(min(s.value for _, s in points), 1e-9)
            > 20
        ):
            cdf.set_xscale("log")
        cdf.legend(fontsize=7)
        plots.append(Plot(f"latency-{_slug(test)}", f"latency: {test}", fig))
    return plots


def _pct_x(p: float) -> float:
    """Percentiles on a log scale of the tail: p50 -> 1, p90 -> 2, p99 -> 3, p99.9 -> 4."""
    return -math.log10(1 - p / 100) + 0.7


def concurrency(samples: list[Sample], order: list[str]) -> list[Plot]:
    ok = [s for s in _ok(samples) if s.experiment == "throughput" and _drawn(s, "concurrency")]
    series: dict[tuple[str, str], list[tuple[float, Sample]]] = defaultdict(list)
    for s in ok:
        level = _numeric_level(s.params.get("level"))
        if level is not None:
            series[(s.workload, s.metric.rsplit("@", 1)[0])].append((level, s))
    plots = []
    colour = _colour(order)
    # several levels and not all zero (error counts); throughput-like first, then the rest
    keys = [k for k in sorted(series) if len({lv for lv, _ in series[k]}) >= 2
            and any(s.value for _, s in series[k])]  # fmt: skip
    keys.sort(key=lambda k: series[k][0][1].direction != "higher")
    for workload, metric in keys[:MAX_PER_KIND]:
        mine = series[(workload, metric)]
        unit = mine[0][1].unit
        fig, (ax,) = _figure(f"{workload}: {metric} ({unit}) against concurrency")
        for r in _runtimes([s for _, s in mine], order):
            levels = sorted({lv for lv, s in mine if s.runtime == r})
            sts = [summarize([s.value for v, s in mine if s.runtime == r and v == lv])
                   for lv in levels]  # fmt: skip
            med = [st.median for st in sts]
            err = _ci_err(sts)
            ax.errorbar(levels, med, yerr=err, marker="o", capsize=3, label=r, color=colour(r))
        every = sorted({lv for lv, _ in mine})
        if every[0] > 0 and every[-1] / every[0] >= 8:  # a sweep such as 1, 4, 16, 64
            ax.set_xscale("log")
        ax.set_xlabel("level (connections / clients / threads)")
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
        plots.append(Plot(f"concurrency-{_slug(workload)}-{_slug(metric)}",
                          f"{workload}: {metric} against concurrency", fig))  # fmt: skip
    return plots


def _numeric_level(level: object) -> float | None:
    """A level's number: 16 (clients), or 40 of "read_write:40" (mariadb's test:threads)."""
    if isinstance(level, int | float) and not isinstance(level, bool):
        return float(level)
    if isinstance(level, str):
        m = re.fullmatch(r"[A-Za-z_.]+:(\d+)", level)
        if m:
            return float(m[1])
    return None


def _ci_err(sts: list) -> list[list[float]]:
    """Error bar lengths from each summary's 95% CI (0 where there is none)."""
    lo = [st.median - st.ci_low if not math.isnan(st.ci_low) else 0.0 for st in sts]
    hi = [st.ci_high - st.median if not math.isnan(st.ci_high) else 0.0 for st in sts]
    return [lo, hi]


def scalability(samples: list[Sample], order: list[str]) -> list[Plot]:
    from virtbench.report.fits import PER, trend, trend_cells

    ok = [s for s in _ok(samples) if s.experiment == "scalability"]
    metric = worker_metric(ok)
    if metric is None:
        return []
    runtimes = _runtimes([s for s in ok if s.metric == metric], order)
    fig, axes = _figure(f"scalability: {metric}, normalised to the first point",
                        len(runtimes), 4.6)  # fmt: skip
    for ax, r in zip(axes, runtimes, strict=True):
        mine = [s for s in ok if s.runtime == r]
        points = sorted({s.background for s in mine if s.metric == metric})
        by = {n: np.array([s.value for s in mine if s.metric == metric and s.background == n])
              for n in points}  # fmt: skip
        first = float(np.mean(by[points[0]])) or math.nan
        mean = np.array([np.mean(by[n]) for n in points]) / first
        sd = np.array([np.std(by[n], ddof=1) if len(by[n]) > 1 else 0.0 for n in points]) / first
        ax.plot(points, mean, marker="o", color=COLOURS[0], label=f"{metric} (mean)")
        ax.fill_between(points, mean - sd, mean + sd, color=COLOURS[0], alpha=0.2, label="± SD")
        f = trend(ok, metric, r)
        if f is not None:  # the fitted line, per background instance
            slope, ci, word = trend_cells(f)
            line = [(f.level + f.slope / PER * (n - points[0])) / first for n in points]
            ax.plot(points, line, ls=":", color=COLOURS[0],
                    label=f"fit: {slope} per {PER} ({ci}), {word}")  # fmt: skip
        for host, c in zip(metrics.plotted("scalability"), COLOURS[1:], strict=False):
            vals = [np.mean([s.value for s in mine if s.metric == host.name and s.background == n]
                            or [math.nan]) for n in points]  # fmt: skip
            if vals and not math.isnan(vals[0]) and vals[0]:
                ax.plot(points, np.array(vals) / vals[0], ls="--", color=c, label=host.label)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_title(r, fontsize=9)
        ax.set_xlabel("background instances")
        ax.set_ylabel("relative to the first point")
        ax.legend(fontsize=7)
    return [Plot(f"scalability-{_slug(metric)}", f"scalability: {metric}", fig)]


def isolation(samples: list[Sample], order: list[str]) -> list[Plot]:
    ok = [s for s in _ok(samples) if s.experiment == "isolation"]
    metric = worker_metric(ok)
    if metric is None:
        return []
    ok = [s for s in ok if s.metric == metric]
    runtimes = _runtimes(ok, order)
    unit, direction = ok[0].unit, ok[0].direction
    attackers = sorted({s.attacker for s in ok if s.attacker})
    placements = sorted({s.placement for s in ok if s.placement}, key=_placement_order)
    fig, axes = _figure(f"isolation: {metric} ({unit}, {direction} is better), median and "
                        "95% CI", len(runtimes), 5.2)  # fmt: skip
    width = 0.8 / max(1, len(placements))
    for ax, r in zip(axes, runtimes, strict=True):
        mine = [s for s in ok if s.runtime == r]
        base = summarize([s.value for s in mine if not s.attacker])
        ax.bar([0], [base.median], 0.6, yerr=_ci_err([base]), capsize=3, color="grey",
               label="baseline")  # fmt: skip
        for j, p in enumerate(placements):
            sts = [summarize([s.value for s in mine if (s.attacker, s.placement) == (a, p)])
                   for a in attackers]  # fmt: skip
            x = np.arange(1, len(attackers) + 1) + (j - (len(placements) - 1) / 2) * width
            med = [st.median if st.n else math.nan for st in sts]  # not measured: no bar
            ax.bar(x, med, width, yerr=_ci_err(sts), capsize=2, color=COLOURS[j], label=p)
            for xi, st in zip(x, sts, strict=True):
                if not st.n:
                    ax.annotate("n/a", (xi, 0), ha="center", va="bottom", fontsize=7,
                                color="grey")  # fmt: skip
        ax.set_xticks(range(len(attackers) + 1), ["baseline", *attackers], rotation=30)
        ax.set_title(r, fontsize=9)
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
    return [Plot(f"isolation-{_slug(metric)}", f"isolation: {metric}", fig)]


def _placement_order(p: str) -> int:
    known = ["same-cpu", "smt-sibling", "other-cpu", "all-other"]
    return known.index(p) if p in known else len(known)


def density(samples: list[Sample], order: list[str]) -> list[Plot]:
    """Each new instance's PSS as instances pile up; then the host's memory in use and its
    kernel side above the pile-up's start, each with its fitted slope (report/fits.py)."""
    from virtbench.report.fits import cost_cells, cost_fits

    ok = [s for s in _ok(samples) if s.experiment == "density"]
    panels = metrics.plotted("density")
    series = {m.name: m.fits or m.name for m in panels}
    if not any(s.metric in series.values() for s in ok):
        return []
    fits = cost_fits(ok)
    colour = _colour(order)
    fig, axes = _figure("density: memory against instances running", len(panels), 4.6)
    for ax, m in zip(axes, panels, strict=True):
        mine = [s for s in ok if s.metric == series[m.name]]
        for r in _runtimes(mine, order):
            if not m.fits:  # a new instance's PSS, at the instances running with it
                by: dict[int, list[float]] = defaultdict(list)
                for s in mine:
                    if s.runtime == r:
                        by[s.background + 1].append(s.value)  # type: ignore[arg-type]
                xs = sorted(by)
                ax.plot(xs, [np.median(by[n]) for n in xs], marker="." if len(xs) > 30 else "o",
                        ms=3, lw=1, label=r, color=colour(r))  # fmt: skip
                continue
            # each pile-up's steps above its own start, and the line fitted through them
            start: dict[int, float] = {}
            pts = sorted((s.repetition, s.background, s.value) for s in mine if s.runtime == r)
            for rep, _, v in pts:
                start.setdefault(rep, v)  # type: ignore[arg-type]
            xs = [n for _, n, _ in pts]
            ax.plot(xs, [v - start[rep] for rep, _, v in pts], ls="", marker="o", ms=3,
                    color=colour(r))  # fmt: skip
            f = fits.get((m.name, r))
            text = cost_cells(f, m.name)[0] if f is not None else "-"
            if f is not None:
                line = [0.0, f.slope * (max(xs) - min(xs))]
                ax.plot([min(xs), max(xs)], line, lw=1, color=colour(r))
            ax.plot([], [], marker="o", ms=3, color=colour(r), label=f"{r}: {text} each")
        ax.set_title(m.label, fontsize=9)
        ax.set_xlabel("instances running")
        if m.fits:
            ax.set_ylabel("MiB above the pile-up's start")
            ax.axhline(0.0, color="grey", lw=0.8)
        else:
            ax.set_ylabel("MiB per instance")
            ax.set_ylim(bottom=0)
        if mine:
            ax.legend(fontsize=7)
    return [Plot("density-memory-per-instance", "density: memory per instance", fig)]


KINDS = (boot, latency, concurrency, scalability, isolation, density)


def figures(samples: list[Sample], runtime_order: list[str]) -> list[Plot]:
    """Every plot the run's samples allow, in a fixed order."""
    out: list[Plot] = []
    with plt.rc_context(STYLE):
        for kind in KINDS:
            for p in kind(samples, runtime_order):
                p.fig.tight_layout()
                out.append(p)
    return out


def _slug(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "_", text).strip("_")
