"""What the report finds in a run's figures, beside its tables and plots: what to
distrust (warnings, ranked by what they change), the differences between runtimes
(Kruskal-Wallis with Dunn's pairs, or ANOVA with Tukey's HSD, for every measure three or
more runtimes share; two runtimes: the permutation test of compare), and a DESMET-style
score table against a baseline runtime (desmet.py). html.py lays them out."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from rich.table import Table
from rich.text import Text

from virtbench.analysis.significance import ab_test, anova_tukey, holm, kruskal_dunn, min_p
from virtbench.report import compare as cmp
from virtbench.report.cells import Rows
from virtbench.report.compare import label
from virtbench.report.trust import trust_notes
from virtbench.store.frame import as_frame

MAX_SPREAD = 25  # high-CV groups listed by name (largest first); the rest are counted


class ScoreOptions(Protocol):
    """What the DESMET scores are made with (the report's Options)."""

    baseline: str | None
    boot_baseline: str | None
    bands: dict[str, tuple[float, ...]]
    weights: dict[str, float]


@dataclass
class HtmlTable:
    title: str
    headers: list[str]
    rows: list[list[str]]
    numeric: list[bool]
    notes: list[str] = field(default_factory=list)  # the table's caption, line by line


def from_rich(t: Table) -> HtmlTable:
    """A Rich table's text (markup removed), for an HTML <table>."""
    cols = [[Text.from_markup(str(c)).plain for c in col.cells] for col in t.columns]
    rows = [list(r) for r in zip(*cols, strict=True)] if cols else []
    numeric = [col.justify == "right" for col in t.columns]
    title = Text.from_markup(str(t.title)).plain if t.title else ""
    notes = Text.from_markup(str(t.caption)).plain.splitlines() if t.caption else []
    return HtmlTable(title, [str(c.header) for c in t.columns], rows, numeric, notes)


def condition_groups(samples: Rows) -> dict[tuple[str, ...], dict[str, list[float]]]:
    """Successful, non-warm-up values of the figures the report compares (not host state,
    counts or side figures: virtbench.metrics) by condition (without runtime), then runtime: one
    value per independent unit."""
    f = as_frame(samples)
    if "report groups" not in f.memo:  # warnings, differences and scores all read them
        out: dict[tuple[str, ...], dict[str, list[float]]] = defaultdict(dict)
        for key, rows in cmp.condition_rows(f, True, lambda m: m.compared).items():
            values = cmp.unit_means(f, rows)  # tests and scores count units, not nested ones
            if values.size:
                out[key[:-1]][key[-1]] = values.tolist()
        f.memo["report groups"] = dict(out)
    return f.memo["report groups"]


def warnings(samples: Rows, events: list[tuple[float, str, str]], cv_warn: float
             ) -> list[tuple[str, str]]:  # fmt: skip
    """(level, text) of everything a reader should weigh before trusting the numbers."""
    f = as_frame(samples)
    out = [(level, msg) for _, level, msg in events]
    out += trust_notes(f)
    emulated = int(np.sum(f.emulated & ~f.warmup))
    if emulated:
        out.append(("warning", f"{emulated} samples were measured under emulation (QEMU TCG): "
                               "functional results only, not performance"))  # fmt: skip
    failed = f.take(f.failed & ~f.warmup)
    for (runtime, metric), rows in sorted(failed.groups("runtime", "metric")):
        error = failed.labels["error"][failed.codes["error"][rows[0]]]
        out.append(("warning", f"{runtime} {metric}: {len(rows)} failed measurement(s), e.g. "
                               f"{error[:300]}"))  # fmt: skip
    spread = []
    for key, by_rt in condition_groups(f).items():
        for runtime, values in by_rt.items():
            arr = np.asarray(values)
            mean = float(arr.mean()) if arr.size else math.nan
            cv = float(arr.std(ddof=1)) / mean if arr.size >= 3 and mean else math.nan
            if not math.isnan(cv) and cv > cv_warn:
                spread.append((cv, f"{label(key)} on {runtime}: CV {cv * 100:.1f}% "
                                   f"over n={arr.size}"))  # fmt: skip
    spread.sort(reverse=True)
    out += [("info", f"high spread: {text}") for _, text in spread[:MAX_SPREAD]]
    if len(spread) > MAX_SPREAD:
        out.append(("info", f"high spread: {len(spread) - MAX_SPREAD} more groups with a CV "
                            f"above {cv_warn * 100:g}%"))  # fmt: skip
    return out


LEVELS = {"error": 0, "warning": 1, "info": 2}
FOLD_AFTER = 3  # routine notes of one kind beyond this many are counted, not listed


def ranked(notes: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Warnings by what they change: errors, then warnings, then notes; within a level in
    the order found. Info notes of one kind (their words before the first colon, e.g.
    "high spread") past FOLD_AFTER are folded into one line counting the rest."""
    out = sorted(notes, key=lambda n: LEVELS.get(n[0], 1))
    kinds: dict[str, int] = {}
    kept: list[tuple[str, str]] = []
    for level, text in out:
        kind = text.split(":", 1)[0]
        kinds[kind] = kinds.get(kind, 0) + 1
        if level != "info" or kinds[kind] <= FOLD_AFTER:
            kept.append((level, text))
    for kind in kinds:
        infos = sum(1 for level, t in out if level == "info" and t.split(":", 1)[0] == kind)
        if infos > FOLD_AFTER:
            kept.append(("info", f"{kind}: {infos - FOLD_AFTER} more like these"))
    return kept


def differences(samples: Rows, order: list[str], global_test: str = "kruskal"
                ) -> HtmlTable:  # fmt: skip
    """Per measure shared by two or more runtimes: the global test (three or more: Kruskal-
    Wallis or ANOVA; two: the permutation test of compare), its p corrected by Holm over
    all the measures of the table, and -- only where that is significant -- the pairs the
    post-hoc test (Dunn or Tukey HSD) tells apart."""
    tests: list[tuple[str, str, float, float, list[tuple[str, str]]]] = []
    for key, by_rt in condition_groups(samples).items():
        groups = {r: by_rt[r] for r in order if len(by_rt.get(r, [])) >= 2}
        if len(groups) < 2:
            continue
        if len(groups) == 2:
            a, b = groups
            r = ab_test(groups[a], groups[b])
            if min_p(r.n_a, r.n_b) > 0.05:
                tests.append((label(key), f"too few values ({r.n_a} vs {r.n_b})", math.nan,
                              math.nan, []))  # fmt: skip
            else:
                tests.append((label(key), "permutation (means)", math.nan, r.p, [(a, b)]))
            continue
        test = anova_tukey(groups) if global_test == "anova" else kruskal_dunn(groups)
        if test is not None:
            pairs = [(p.a, p.b) for p in test.pairs if p.significant]
            tests.append((label(key), test.test, test.statistic, test.p, pairs))
    adjusted = holm([t[3] for t in tests])
    rows = []
    for (measure, name, stat, _, pairs), p in zip(tests, adjusted, strict=True):
        if math.isnan(p):
            differ = "-"
        elif p > 0.05:
            differ = "none (the global test is not significant)"
        else:
            differ = ", ".join(f"{a} vs {b}" for a, b in pairs) or "none of the pairs"
        rows.append([measure, name, "-" if math.isnan(stat) else f"{stat:.3g}",
                     "-" if math.isnan(p) else f"{p:.3g}", differ])  # fmt: skip
    headers = ["measure", "test", "statistic", f"p (Holm over {len(tests)})",
               "significantly different pairs (5%)"]  # fmt: skip
    return HtmlTable("differences between runtimes", headers, rows,
                     [False, False, True, True, False])  # fmt: skip


def median_of(values: list[float]) -> float:
    return float(np.median(values)) if values else math.nan
