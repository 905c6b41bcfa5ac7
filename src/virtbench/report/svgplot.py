"""Figures written as SVG text, without matplotlib: panels with linear or log axes, their
ticks as people write numbers (with units), boxes, dots, whiskers, steps and a legend,
in about a millisecond a figure. A site draws hundreds of run pages; the simple kinds
(report/lightplots.py) are drawn so, the rest by matplotlib (report/plotkit.py). The
text stays text, and the look follows plotkit's: the same colours, grid and sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

import numpy as np

from virtbench.errors import VirtbenchError
from virtbench.report.plotkit import tick_text

# matplotlib's default colours ("tab10"), as plotkit's figures have them
TAB10 = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
FONT = 'font-family="DejaVu Sans, Arial, sans-serif"'
PANEL_W, PANEL_H = 400, 300  # a panel's plotting area, pixels
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 46, 70  # room around it: ticks, labels, title


def colour_of(order: list[str]) -> dict[str, str]:
    return {r: TAB10[i % len(TAB10)] for i, r in enumerate(order)}


def _nice_step(span: float, count: int) -> float:
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)


@dataclass
class Axis:
    """Values lo..hi (log10 where `log`) onto pixels a..b."""

    lo: float
    hi: float
    a: float
    b: float
    log: bool = False

    @classmethod
    def of(cls, values: list[float], a: float, b: float, log: bool, zero: bool) -> Axis:
        lo, hi = min(values), max(values)
        if log:
            return cls(
                10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi)), a, b, True
            )
        lo = min(lo, 0.0) if zero else lo
        if hi <= lo:
            lo, hi = lo - 1, hi + 1
        step = _nice_step(hi - lo, 5)
        return cls(math.floor(lo / step) * step, math.ceil(hi / step) * step, a, b)

    def at(self, v: float) -> float:
        lo, hi, v = (
            (math.log10(self.lo), math.log10(self.hi), math.log10(v))
            if self.log
            else (self.lo, self.hi, v)
        )
        return self.a + (v - lo) / (hi - lo) * (self.b - self.a)

    def all_at(self, values: np.ndarray) -> list[float]:
        """`at` of each value (at numpy's speed: a figure places thousands)."""
        v = np.asarray(values, dtype=float)
        lo, hi = self.lo, self.hi
        if self.log:
            v, lo, hi = np.log10(v), math.log10(lo), math.log10(hi)
        placed: list[float] = (self.a + (v - lo) / (hi - lo) * (self.b - self.a)).tolist()
        return placed

    def ticks(self) -> list[float]:
        if self.log:
            decades = range(round(math.log10(self.lo)), round(math.log10(self.hi)) + 1)
            marks = [m * 10.0**d for d in decades for m in (1, 2, 5)]
            return [t for t in marks if self.lo <= t <= self.hi * 1.000001]
        step = _nice_step(self.hi - self.lo, 5)
        n = round((self.hi - self.lo) / step)
        return [self.lo + i * step for i in range(n + 1)]


@dataclass
class Panel:
    """One plotting area at (x, y), and what is drawn in it."""

    x: float
    y: float
    w: float = PANEL_W
    h: float = PANEL_H
    parts: list[str] = field(default_factory=list)
    taken: list[tuple[float, float]] = field(default_factory=list)  # points drawn

    def add(self, element: str) -> None:
        self.parts.append(element)

    def title(self, text: str) -> None:
        self.add(_text(self.x + self.w / 2, self.y - 8, text, 'text-anchor="middle"', 12))

    def y_axis(self, axis: Axis, unit: str, label: str) -> None:
        for t in axis.ticks():
            py = axis.at(t)
            self.add(
                _line(self.x, py, self.x + self.w, py, 'stroke="#b0b0b0" stroke-opacity="0.3"')
            )
            self.add(_text(self.x - 6, py + 4, tick_text(t, unit), 'text-anchor="end"'))
        cx, cy = self.x - LEFT + 14, self.y + self.h / 2
        self.add(_text(cx, cy, label, f'text-anchor="middle" transform="rotate(-90 {cx} {cy})"'))

    def x_axis(self, axis: Axis, unit: str, label: str) -> None:
        for t in axis.ticks():
            px = axis.at(t)
            self.add(
                _line(px, self.y, px, self.y + self.h, 'stroke="#b0b0b0" stroke-opacity="0.3"')
            )
            self.add(_text(px, self.y + self.h + 16, tick_text(t, unit), 'text-anchor="middle"'))
        self.add(_text(self.x + self.w / 2, self.y + self.h + 38, label, 'text-anchor="middle"'))

    def categories(self, names: list[str]) -> list[float]:
        """The names along the x axis, slanted; each one's x."""
        xs = [self.x + (i + 0.5) * self.w / len(names) for i in range(len(names))]
        for px, name in zip(xs, names, strict=True):
            y = self.y + self.h + 14
            slant = f'text-anchor="end" transform="rotate(-30 {px:.1f} {y:.1f})"'
            self.add(_text(px, y, name, slant))
        return xs

    def frame(self) -> None:
        """The left and bottom spines (the top and right are left out, as plotkit's)."""
        x, y, w, h = self.x, self.y, self.w, self.h
        self.add(_line(x, y, x, y + h, 'stroke="#000" stroke-width="0.8"'))
        self.add(_line(x, y + h, x + w, y + h, 'stroke="#000" stroke-width="0.8"'))

    def legend(self, items: list[tuple[str, str]], marker: str = "line") -> None:
        """(label, colour) in a box in the corner of the panel that hides the fewest of
        the points marked (`taken`), as matplotlib's "best" does."""
        width = 24 + 6.5 * max(len(label) for label, _ in items)
        height = 6 + 15 * len(items)
        corners = [
            (self.x + self.w - width - 6, self.y + 6),
            (self.x + 6, self.y + 6),
            (self.x + self.w - width - 6, self.y + self.h - height - 6),
            (self.x + 6, self.y + self.h - height - 6),
        ]
        taken = np.asarray(self.taken, dtype=float).reshape(-1, 2).T
        x0, y0 = min(corners, key=lambda c: _hidden(taken, c[0], c[1], width, height))
        box = 'fill="#fff" fill-opacity="0.8" stroke="#ccc"'
        self.add(f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{width:.1f}" height="{height}" {box}/>')
        for i, (label, colour) in enumerate(items):
            y = y0 + 14 + 15 * i
            if marker == "line":
                self.add(
                    _line(x0 + 5, y - 4, x0 + 19, y - 4, f'stroke="{colour}" stroke-width="1.5"')
                )
            else:
                self.add(f'<circle cx="{x0 + 12:.1f}" cy="{y - 4:.1f}" r="3" fill="{colour}"/>')
            self.add(_text(x0 + 23, y, label, "", 10))


def _hidden(taken: np.ndarray, x: float, y: float, w: float, h: float, near: float = 6) -> int:
    """How many of the points `taken` (x row, y row) a box at (x, y) would hide."""
    px, py = taken
    inside = (x - near <= px) & (px <= x + w + near) & (y - near <= py) & (py <= y + h + near)
    return int(np.count_nonzero(inside))


def _line(x1: float, y1: float, x2: float, y2: float, style: str) -> str:
    return f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" {style}/>'


def _text(x: float, y: float, text: str, extra: str = "", size: int = 11) -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" {extra}>{escape(text)}</text>'


def panels(count: int) -> list[Panel]:
    """`count` panels side by side (at most two to a row, as plotkit.new_figure)."""
    cols = min(count, 2)
    return [
        Panel(
            LEFT + (i % cols) * (PANEL_W + LEFT + RIGHT),
            TOP + (i // cols) * (PANEL_H + TOP + BOTTOM),
        )
        for i in range(count)
    ]


@dataclass
class LightPlot:
    """A figure as SVG text: shown inline (`svg`) or written as a file (`save`), as
    plotkit's Plot (without its PNG)."""

    name: str
    title: str
    body: str

    def svg(self, scope: str = "") -> str:
        return self.body  # no ids inside: nothing to scope

    def save(self, directory: Path) -> list[Path]:
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{self.name}.svg"
            path.write_text(self.body)
        except OSError as exc:
            raise VirtbenchError(f"--plots {directory}: cannot write ({exc.strerror})") from None
        return [path]

    def close(self) -> None:
        pass


def figure(name: str, title: str, heading: str, drawn: list[Panel]) -> LightPlot:
    """The panels as one SVG, `heading` above them."""
    cols = min(len(drawn), 2)
    rows = -(-len(drawn) // cols)
    width = cols * (PANEL_W + LEFT + RIGHT)
    height = rows * (PANEL_H + TOP + BOTTOM)
    head = _text(width / 2, 18, heading, 'text-anchor="middle"', 13)
    inner = "".join(part for p in drawn for part in p.parts)
    body = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" {FONT}>'
        f"<title>{escape(title)}</title>{head}{inner}</svg>"
    )
    return LightPlot(name, title, body)
