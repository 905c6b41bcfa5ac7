"""Tables on a narrow terminal: shown as they are where they fit, else stacked, one block
per row (its label cells, then each other cell with its header), wrapped only at spaces,
so that no value is ever cut to an ellipsis."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text


def fit(t: Table, console: Console) -> RenderableType:
    """`t` itself when it fits the console with every value whole, else stacked. Whole:
    drawn at the console's width, no cell or header shows an ellipsis it does not hold
    (Rich's layout may cut a column that a sum of the widest words says would fit)."""
    if uncut_width(t) > console.width:
        return stacked(t, console.width)
    probe = Console(width=console.width, file=io.StringIO(), color_system=None)
    probe.print(t)
    drawn = probe.file.getvalue().count("…")  # type: ignore[attr-defined]
    held = sum(str(c).count("…") for col in t.columns for c in [col.header, *col.cells])
    held += str(t.title or "").count("…") + str(t.caption or "").count("…")
    return t if drawn <= held else stacked(t, console.width)


def uncut_width(t: Table) -> int:
    """The narrowest `t` can be drawn without cutting a value: each column as wide as
    its widest word (its widest line where it does not wrap), plus padding and rules."""
    total = 0
    for col in t.columns:
        cells = [str(col.header), *(str(c) for c in col.cells)]
        total += max(_narrowest(c, col.no_wrap) for c in cells) + 3  # padding, a rule
    return total + 1


def _narrowest(markup: str, no_wrap: bool) -> int:
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
    cols = [[Text.from_markup(c) if isinstance(c, str) else Text(str(c)) for c in col.cells]
            for col in t.columns]  # fmt: skip
    headers = [Text.from_markup(str(col.header)).plain for col in t.columns]
    lead = _labels(t)
    parts: list[RenderableType] = []
    if t.title:
        parts.append(Text.from_markup(str(t.title), style="italic"))
    for row in zip(*cols, strict=True):
        head = Text("  ").join(cell for cell in row[:lead] if cell.plain)
        head.stylize("bold")
        pairs = [Text.assemble((f"{h} ", "dim"), cell) for h, cell in
                 zip(headers[lead:], row[lead:], strict=True) if cell.plain]  # fmt: skip
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
