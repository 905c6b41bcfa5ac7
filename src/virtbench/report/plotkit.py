"""What every plot module shares: the `Plot` (saved as PNG and SVG, or inlined as SVG),
the style, the colours per runtime, and the small helpers that pick and summarise samples.
Matplotlib is loaded when the first figure is drawn (`pyplot()`), not when a module that
can draw is imported: `show` and `compare` never draw, and never pay for it.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from virtbench import metrics
from virtbench.errors import VirtbenchError
from virtbench.store.records import Sample

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter
    from matplotlib.typing import RcKeyType

STYLE: dict[RcKeyType, Any] = {
    "figure.dpi": 100,
    "savefig.dpi": 110,
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "svg.fonttype": "none",  # text stays text: smaller, searchable
    "svg.hashsalt": "virtbench",  # the same data gives the same file
    # a study's run draws dozens; each is closed once written (html.run_section)
    "figure.max_open_warning": 0,
}
MAX_PER_KIND = 16  # a run with 100 metrics gets the first 16 of each kind, not 100 plots


@cache
def pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg back end, imported on first use."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


@cache
def colours() -> tuple[tuple[float, float, float], ...]:
    """matplotlib's ten "tab10" colours, as RGB triples."""
    from matplotlib.colors import ListedColormap

    tab10 = cast(ListedColormap, pyplot().get_cmap("tab10"))  # a listed map: ten colours
    return cast(tuple[tuple[float, float, float], ...], tab10.colors)


@contextlib.contextmanager
def _legend_search_quiet() -> Iterator[None]:
    """Matplotlib warns when placing a legend where it hides least data took it over a
    second (a loaded machine: a matter of time, not of the figure); the figure is right."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message='Creating legend with loc="best" can be slow')
        yield


@dataclass
class Plot:
    name: str  # file stem, e.g. "boot-spawn_to_exit"
    title: str
    fig: Figure

    _svg: str = field(default="", repr=False)  # the SVG, made once for file and page

    def _svg_text(self) -> str:
        if not self._svg:
            buf = io.StringIO()
            with pyplot().rc_context(STYLE), _legend_search_quiet():  # svg.* read when saving
                self.fig.savefig(buf, format="svg", bbox_inches=None, metadata=_metadata("svg"))
            self._svg = buf.getvalue()
        return self._svg

    def save(self, directory: Path) -> list[Path]:
        out = []
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{self.name}.png"
            with pyplot().rc_context(STYLE), _legend_search_quiet():
                self.fig.savefig(path, metadata=_metadata("png"))
            out.append(path)
            path = directory / f"{self.name}.svg"
            path.write_text(self._svg_text())
            out.append(path)
        except OSError as exc:
            raise VirtbenchError(f"--plots {directory}: cannot write ({exc.strerror})") from None
        return out

    def svg(self, scope: str = "") -> str:
        """The figure as an inline <svg> element, its ids prefixed (by `scope`, e.g. the
        run id, and the plot's name) so that several plots in one page never share one."""
        text = self._svg_text()
        text = text[text.index("<svg") :]
        prefix = re.sub(r"[^a-zA-Z0-9]", "-", f"{scope}-{self.name}" if scope else self.name) + "-"
        text = re.sub(r'\bid="([^"]+)"', rf'id="{prefix}\1"', text)
        text = re.sub(r"url\(#([^)]+)\)", rf"url(#{prefix}\1)", text)
        return re.sub(r'href="#([^"]+)"', rf'href="#{prefix}\1"', text)

    def close(self) -> None:
        pyplot().close(self.fig)


def _metadata(ext: str) -> dict[str, str | None]:
    return {"Date": None} if ext == "svg" else {"Software": "virtbench"}


def colour_for(order: list[str]) -> Callable[[str], tuple[float, ...]]:
    palette = colours()
    return lambda r: palette[order.index(r) % len(palette)] if r in order else palette[-1]


def successful(samples: list[Sample]) -> list[Sample]:
    return [s for s in samples if not s.warmup and not s.error and s.value is not None]


def runtimes_in(samples: list[Sample], order: list[str]) -> list[str]:
    have = {s.runtime for s in samples}
    return [r for r in order if r in have] + sorted(have - set(order))


PANELS_PER_ROW = 2  # wider, and a page would shrink its text below what can be read


def new_figure(title: str, ncols: int = 1, width: float = 6.4) -> tuple[Figure, list]:
    """A figure of `ncols` panels `width` inches wide each, at most PANELS_PER_ROW to a
    row (more go on the rows below): a page shows it at its own size, its text as set."""
    cols = min(ncols, PANELS_PER_ROW)
    rows = -(-ncols // cols)
    fig, axes = pyplot().subplots(rows, cols, figsize=(width * cols, 3.8 * rows), squeeze=False)
    flat = list(axes.flat)
    for spare in flat[ncols:]:  # an odd panel out: the row's other place left empty
        spare.remove()
    fig.suptitle(title, fontsize=10)
    return fig, flat[:ncols]


def drawn_as(s: Sample, kind: metrics.PlotKind) -> bool:
    """Does the registry have plot `kind` draw this sample's metric?"""
    return metrics.lookup(s.metric, s.workload).plot == kind


def numeric_level(level: object) -> float | None:
    """A level's number: 16 (clients), or 40 of "read_write:40" (mariadb's test:threads)."""
    if isinstance(level, int | float) and not isinstance(level, bool):
        return float(level)
    if isinstance(level, str):
        m = re.fullmatch(r"[A-Za-z_.]+:(\d+)", level)
        if m:
            return float(m[1])
    return None


def ci_err(sts: list) -> list[list[float]]:
    """Error bar lengths from each summary's 95% CI (0 where there is none)."""
    lo = [st.median - st.ci_low if not math.isnan(st.ci_low) else 0.0 for st in sts]
    hi = [st.ci_high - st.median if not math.isnan(st.ci_high) else 0.0 for st in sts]
    return [lo, hi]


def tick_text(v: float, unit: str) -> str:
    """A tick's label as people write the number, with its unit: "1 ms", "10 ms", "0.5
    MiB", "50%", "0" (never 10^0 or 1e+03)."""
    from virtbench.report.cells import fmt

    gap = "" if unit.startswith("%") or not unit else " "
    return f"{fmt(v)}{gap}{unit}" if v else "0"


def spread_wide(values: list[float]) -> bool:
    """Whether an axis of `values` is a log one: all positive, spanning more than a decade."""
    positive = [v for v in values if v > 0]
    return (
        len(positive) >= 2 and len(positive) == len(values) and max(positive) > 10 * min(positive)
    )


def unit_ticks(unit: str) -> FuncFormatter:
    """Tick labels as `tick_text` writes them."""
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: tick_text(v, unit))


def log_if_spread(ax: Axes, values: list[float], unit: str, axis: str = "y") -> bool:
    """A log axis only where the values span more than a decade, then with unit ticks
    (1 ms, 10 ms, 100 ms); True where it made one."""
    if not spread_wide(values):
        return False
    from matplotlib.ticker import LogLocator, NullFormatter

    scale = ax.set_yscale if axis == "y" else ax.set_xscale
    scale("log")
    which = ax.yaxis if axis == "y" else ax.xaxis
    which.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))  # 1, 2, 5, 10 ms...
    which.set_major_formatter(unit_ticks(unit))
    which.set_minor_formatter(NullFormatter())
    return True


def log_levels(ax: Axes, axis: str = "x") -> None:
    """A log axis of counts (instances, connections: 1, 4, 16, 64), its ticks as plain
    numbers, never 10^0."""
    from matplotlib.ticker import NullFormatter

    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    which = ax.xaxis if axis == "x" else ax.yaxis
    which.set_major_formatter(unit_ticks(""))
    which.set_minor_formatter(NullFormatter())


def slugify(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "_", text).strip("_")
