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

from virtbench import metrics
from virtbench.analysis.significance import ab_test, anova_tukey, holm, kruskal_dunn, min_p
from virtbench.report import compare as cmp
from virtbench.report import conditions
from virtbench.report.cells import Rows, p_text
from virtbench.report.compare import label
from virtbench.report.trust import trust_notes
from virtbench.store.frame import Frame, as_frame


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


def warnings(
    samples: Rows, events: list[tuple[float, str, str]], cv_warn: float
) -> list[tuple[str, str]]:
    """(level, text) of everything a reader should weigh before trusting the numbers:
    events, what the figures' spread and order say (trust.py), conditions that differ
    between runtimes, emulation, what a runtime cannot do (once per runtime and reason)
    and what failed, and the groups whose CV is above `cv_warn`."""
    f = as_frame(samples)
    failed = failures(f)
    cannot = [text for _, text in failed if " cannot: " in text]
    # each event once, none that says again what a runtime cannot do, and none that only
    # confirms what was asked (an info: a pile-up that reached its target, the order's
    # seed; they are the run's notes, said apart)
    said = dict.fromkeys((level, msg) for _, level, msg in events if level != "info")
    out = [(level, msg) for level, msg in said if not any(c.split(" (")[0] in msg for c in cannot)]
    out += trust_notes(f)
    out += [(level, text) for level, text in conditions.shown(f) if level == "warning"]
    emulated = int(np.sum(f.emulated & ~f.warmup))
    if emulated:
        out.append(
            (
                "warning",
                f"{emulated} samples were measured under emulation (QEMU TCG): "
                "functional results only, not performance",
            )
        )
    out += failed
    return out + high_spread(f, cv_warn)


def failures(f: Frame) -> list[tuple[str, str]]:
    """What failed: a runtime that cannot do something said once per reason, with how
    many figures it left unmeasured; any other failure per runtime and figure."""
    failed = f.take(f.failed & ~f.warmup)
    cannot: dict[tuple[str, str], set[str]] = defaultdict(set)
    out = []
    for (runtime, metric, workload), rows in sorted(failed.groups("runtime", "metric", "workload")):
        error = failed.labels["error"][failed.codes["error"][rows[0]]]
        head, sep, why = error.partition(" cannot: ")
        if sep and head == runtime:
            cannot[(runtime, why)].add(metric)
            continue
        out.append(
            (
                "warning",
                f"{runtime}, {metrics.label(metric, workload)}: {len(rows)} "
                f"failed measurement(s), e.g. {error[:300]}",
            )
        )
    for (runtime, why), names in cannot.items():
        n = len(names)
        out.insert(
            0, ("warning", f"{runtime} cannot: {why} ({n} figure{'s' * (n != 1)} not measured)")
        )
    return out


def high_spread(f: Frame, cv_warn: float) -> list[tuple[str, str]]:
    """One line for every group whose CV is above `cv_warn`: how many of the groups, the
    three widest by name, and what narrows them (none where no group is)."""
    spread, total = [], 0
    for key, by_rt in condition_groups(f).items():
        for runtime, values in by_rt.items():
            arr = np.asarray(values)
            total += 1
            mean = float(arr.mean()) if arr.size else math.nan
            cv = float(arr.std(ddof=1)) / mean if arr.size >= 3 and mean else math.nan
            if not math.isnan(cv) and cv > cv_warn:
                spread.append((cv, f"{label(key)} on {runtime}"))
    if not spread:
        return []
    spread.sort(reverse=True)
    worst = "; ".join(f"{name} (CV {cv * 100:.0f}%)" for cv, name in spread[:3])
    return [
        (
            "info",
            f"high spread in {len(spread)} of {total} groups (CV above {cv_warn * 100:.0f}%), "
            f"widest: {worst}: more repetitions (--runs, or --target-cv) narrow their CIs",
        )
    ]


def run_notes(events: list[tuple[float, str, str]]) -> list[str]:
    """What the run said that confirms rather than warns (its info events), once each."""
    return list(dict.fromkeys(msg for _, level, msg in events if level == "info"))


LEVELS = {"error": 0, "warning": 1, "info": 2}
FOLD_AFTER = 3  # routine notes of one kind beyond this many are counted, not listed


def ranked(notes: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Warnings by what they change: errors, then warnings, then notes; within a level in
    the order found. Info notes of one kind (their words before the first colon, e.g.
    "high spread") past FOLD_AFTER are named together on one line."""
    out = sorted(notes, key=lambda n: LEVELS.get(n[0], 1))
    kinds: dict[str, list[str]] = defaultdict(list)
    kept: list[tuple[str, str]] = []
    for level, text in out:
        kind, _, rest = text.partition(":")
        if level == "info":
            kinds[kind].append(rest.strip())
            if len(kinds[kind]) > FOLD_AFTER:
                continue
        kept.append((level, text))
    for kind, said in kinds.items():
        if len(said) > FOLD_AFTER:
            kept.append(("info", f"{kind}, also: {'; '.join(said[FOLD_AFTER:])}"))
    return kept


def differences(samples: Rows, order: list[str], global_test: str = "kruskal") -> HtmlTable:
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
                tests.append(
                    (label(key), f"too few values ({r.n_a} vs {r.n_b})", math.nan, math.nan, [])
                )
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
            differ = "n/a"
        elif p > 0.05:
            differ = "none (the global test is not significant)"
        else:
            differ = ", ".join(f"{a} vs {b}" for a, b in pairs) or "none of the pairs"
        stat_cell = "n/a" if math.isnan(stat) else f"{stat:.3g}"
        rows.append([measure, name, stat_cell, p_text(p), differ])
    headers = [
        "measure",
        "test",
        "statistic",
        f"p (Holm over {len(tests)})",
        "significantly different pairs (5%)",
    ]
    return HtmlTable(
        "differences between runtimes", headers, rows, [False, False, True, True, False]
    )


def median_of(values: list[float]) -> float:
    return float(np.median(values)) if values else math.nan
