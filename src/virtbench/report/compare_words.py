"""A comparison in words (report/compare.py computes it): one sentence per decided change,
"B (...) is 1.10x (1.07-1.13) slower than A (...)", or where there is no ratio "B (...) has
at least 440 KiB more than A (...)", and the verdict table as Markdown for a pull
request's comment."""

from __future__ import annotations

import math

from virtbench.report.cells import quantity
from virtbench.report.compare import (
    REGRESSIONS,
    Row,
    cells,
    counts,
    headers,
    label,
    reasons,
)
from virtbench.report.standing import ratio


def times(row: Row) -> tuple[float, float, float]:
    """B in A's terms, how many times worse (>1) or better (<1) whichever way the figure
    improves, with its 95% CI (nan: none)."""
    c, (lo, hi) = row.result.change, row.ci
    if row.direction == "lower":
        return 1 + c, 1 + lo, 1 + hi

    def inverse(x: float) -> float:  # B's figure 0 where more is better: without end worse
        return 1 / x if x else math.inf

    return inverse(1 + c), inverse(1 + hi), inverse(1 + lo)


def sentences(rows: list[Row], name_a: str, name_b: str) -> list[str]:
    """One per row whose verdict is worse or better: "B (run x crun) is 1.10x
    (1.07-1.13) slower than A (...) at time to run and exit (hello)"."""
    out = []
    for row in rows:
        if row.verdict not in ("worse", "better"):
            continue
        if row.reason:
            out.append(f"B ({name_b}) {difference_words(row)} A ({name_a}): {label(row.key)}")
            continue
        if math.isnan(row.result.change):
            continue
        x, lo, hi = times(row)
        worse = row.verdict == "worse"
        if not worse:
            x, lo, hi = 1 / x, 1 / hi, 1 / lo
        timed = row.key[2] in ("ms", "us", "ns", "s")
        word = ("slower" if worse else "faster") if timed else ("worse" if worse else "better")
        ci = f" ({ratio(lo)}-{ratio(hi)})" if not math.isnan(lo) else ""
        out.append(f"B ({name_b}) is {ratio(x)}x{ci} {word} than A ({name_a}): {label(row.key)}")
    return out


def difference_words(row: Row) -> str:
    """A decided difference without a ratio, in words: "has at least 440 KiB more than"
    (the CI's bound nearest zero; the difference itself without a CI)."""
    d, lo, hi = row.diff
    bound = lo if d > 0 else hi
    sure = not math.isnan(bound) and bound * d > 0  # the CI on the difference's side
    text = quantity(abs(bound if sure else d), row.key[2])[0]
    more = "more" if d > 0 else "less"
    return f"has {'at least ' if sure else ''}{text} {more} than"


def markdown(title: str, rows: list[Row], name_a: str, name_b: str) -> str:
    """The verdict table as GitHub-flavoured Markdown (a pull request's comment): the
    title, the table, the verdicts counted, and why a row has no ratio."""

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace("|", "\\|")

    lines = [f"**{esc(title)}**", ""]
    said = sentences(rows, name_a, name_b)
    lines += [f"- {esc(line)}" for line in said] + ([""] if said else [])
    lines.append("| " + " | ".join(map(esc, headers())) + " |")
    lines.append("|---|---:|---:|---:|---:|---:|---|")
    for row in rows:
        *rest, v = cells(row)
        lines.append(
            "| " + " | ".join(map(esc, [*rest, f"**{v}**" if v in REGRESSIONS else v])) + " |"
        )
    n = counts(rows)
    lines += ["", ", ".join(f"{v} {k}" for k, v in n.items() if v)]
    lines += [f"- no ratio: {esc(line)}" for line in reasons(rows)]
    return "\n".join(lines) + "\n"
