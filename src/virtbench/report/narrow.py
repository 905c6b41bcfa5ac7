"""Tables on a narrow terminal: shown as they are where they fit; else the same table
without its least needed columns (DROPPABLE, in that order; a line under it names
them), so a run's output keeps one layout; stacked, one block per row, only where even
its needed columns cannot fit. Labels wrap at spaces, values never: no value is ever cut
to an ellipsis or broken across lines."""

from __future__ import annotations

import functools

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.table import Column, Table
from rich.text import Text

# Columns a narrow terminal may leave out, the first first: spread and counts that the
# CI already stands for, then the secondary comparisons.
DROPPABLE = (
    "outliers",
    "min-max",
    "SD",
    "mean",
    "steps",
    "points",
    "succeeded",
    "n",
    "p (Holm)",
    "batches",
    "ms / instance",
    "wall ms",
    "swap free",
    "mem avail",
    "CV",
    "p99 ms",
    "CPU idle",
    "p95",
    "vs 0",
    "x native",
)


def fit(t: Table, console: Console) -> RenderableType:
    """`t` itself when it fits the console with every value whole; else `t` without its
    DROPPABLE columns, one at a time, until it fits (a note under it names them); else
    stacked."""
    if _whole(t, console.width):
        return t
    shown = t
    for header in DROPPABLE:
        keep = [i for i, col in enumerate(shown.columns) if str(col.header) != header]
        if len(keep) == len(shown.columns):
            continue
        shown = _only(shown, keep)
        if _whole(shown, console.width):
            return _noting_left_out(shown, t)
    # then values may wrap at their spaces ("-57% (-61 to -36%)" on two lines)
    shown = _only(shown, list(range(len(shown.columns))), wrap=True)
    if _whole(shown, console.width):
        return _noting_left_out(shown, t)
    return stacked(t, console.width)


def _whole(t: Table, width: int) -> bool:
    """Whether `t` can be drawn at `width` with every value whole: each column at least
    as wide as its widest word (its widest line where it does not wrap). Where it can
    but does not fit as it is, its columns get their widths here (`_widths`): Rich's own
    layout may shrink a column below its widest word and cut it to an ellipsis."""
    floor = uncut_width(t)
    if floor > width:
        return False
    natural = floor + sum(_natural(col) - column_floor(col) for col in t.columns)
    if natural > width:
        for col, w in zip(t.columns, _widths(t, width), strict=True):
            col.width = w
    return True


def _natural(col: Column) -> int:
    """How wide a column is with no line wrapped."""
    cells = [str(col.header), *(str(c) for c in col.cells)]
    return max(_narrowest(c, True) for c in cells)


def _widths(t: Table, width: int) -> list[int]:
    """Each column's width: its floor (`column_floor`), and of the width left over, a
    share for each column that wraps, as its unwrapped width asks."""
    floors = [column_floor(col) for col in t.columns]
    wants = [max(0, _natural(col) - f) for col, f in zip(t.columns, floors, strict=True)]
    spare = width - uncut_width(t)
    asked = sum(wants)
    out = [f + (spare * w // asked if asked else 0) for f, w in zip(floors, wants, strict=True)]
    return [min(w, f + want) for w, f, want in zip(out, floors, wants, strict=True)]


def _only(t: Table, keep: list[int], wrap: bool = False) -> Table:
    """A copy of `t` with only the columns `keep` (indices), cells, rules and all;
    `wrap`: every column may wrap at spaces."""
    out = Table(
        title=t.title,
        title_justify=t.title_justify,
        caption=t.caption,
        caption_justify=t.caption_justify,
    )
    cols = [t.columns[i] for i in keep]
    for col in cols:
        out.add_column(
            col.header,
            justify=col.justify,
            no_wrap=col.no_wrap and not wrap,
            min_width=col.min_width,
        )
    for row, cells in zip(t.rows, zip(*(col.cells for col in cols), strict=True), strict=True):
        out.add_row(*cells, end_section=row.end_section)
    return out


def _noting_left_out(shown: Table, full: Table) -> Table:
    """`shown` with a last caption line naming the columns of `full` it left out (none:
    `shown` as it is)."""
    have = {str(c.header) for c in shown.columns}
    gone = [str(c.header) for c in full.columns if str(c.header) not in have]
    if not gone:
        return shown
    note = f"left out at this width: {', '.join(gone)} (a wider terminal shows them)"
    shown.caption = f"{shown.caption}\n{note}" if shown.caption else note
    shown.caption_justify = "left"
    return shown


def uncut_width(t: Table) -> int:
    """The narrowest `t` can be drawn without cutting a value: each column as wide as
    its widest word (its widest line where it does not wrap), plus padding and rules."""
    rules = len(t.columns) - 1 + (2 if t.show_edge else 0)
    padding = 2 * len(t.columns) - (0 if t.pad_edge else 2)
    return sum(column_floor(col) for col in t.columns) + padding + rules


def column_floor(col: Column) -> int:
    """The narrowest a column can be without cutting a value: its widest word (its
    widest line where it does not wrap), or its `min_width` where a word a line would be
    not read (a measure's name)."""
    cells = [str(col.header), *(str(c) for c in col.cells)]
    return max(col.min_width or 0, *(_narrowest(c, col.no_wrap) for c in cells))


@functools.lru_cache(maxsize=4096)
def _narrowest(markup: str, no_wrap: bool) -> int:
    """A cell's narrowest width (kept: a run's tables repeat their names and units)."""
    lines = Text.from_markup(markup).plain.splitlines() or [""]
    if no_wrap:
        return max(cell_len(line) for line in lines)
    return max((cell_len(word) for line in lines for word in line.split()), default=0)


def _labels(t: Table) -> int:
    """How many leading columns name the row (left-aligned ones; at least the first)."""
    n = 0
    for col in t.columns:
        if col.justify != "left" or n == 2:
            break
        n += 1
    return max(1, n)


def stacked(t: Table, width: int = 80) -> Group:
    """One block per row: the label cells in bold, then `header value` pairs, as many to
    a line as fit `width` (a pair is never split from its header where it fits a line)."""
    cols = [
        [Text.from_markup(c) if isinstance(c, str) else Text(str(c)) for c in col.cells]
        for col in t.columns
    ]
    headers = [Text.from_markup(str(col.header)).plain for col in t.columns]
    lead = _labels(t)
    parts: list[RenderableType] = []
    if t.title:
        parts.append(Text.from_markup(str(t.title), style="italic"))
    for row in zip(*cols, strict=True):
        head = Text("  ").join(cell for cell in row[:lead] if cell.plain)
        head.stylize("bold")
        pairs = [
            Text.assemble((f"{h} ", "dim"), cell)
            for h, cell in zip(headers[lead:], row[lead:], strict=True)
            if cell.plain
        ]
        lines: list[Text] = []
        for pair in pairs:
            if lines and cell_len(lines[-1].plain) + 3 + cell_len(pair.plain) <= width - 2:
                lines[-1] = Text.assemble(lines[-1], " · ", pair)
            else:
                lines.append(pair)
        parts.append(Text.assemble(head, "\n  ", Text("\n  ").join(lines)))
    if t.caption:
        parts.append(Text.from_markup(str(t.caption), style="dim"))
    return Group(*parts)
