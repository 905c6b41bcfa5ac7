"""The site's machine-readable files: one JSON file per run (its facts, its summaries with
their 95% CIs, its answers and its verdicts against the entry's previous run) and, per
testbed and entry, `latest.json` (the same for the entry's latest completed run), both
described by `schema()` (published as schema/site.schema.json). Numbers stay numbers
(a missing one is null); the words a page shows go beside them, never instead."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from virtbench import __version__, metrics
from virtbench.analysis.stats import Summary
from virtbench.errors import VirtbenchError
from virtbench.host import testbed
from virtbench.report import compare as cmp
from virtbench.report import compare_words as cmp_words
from virtbench.report.answers import emulated_runtimes
from virtbench.report.cells import summarize_rows
from virtbench.report.export import clean
from virtbench.report.standing import Answer, Standing
from virtbench.store.frame import Frame
from virtbench.store.records import RunRecord

SCHEMA_ID = "https://virtbench.dev/schema/site.schema.json"
KEY_FIELDS = (*cmp.FIELDS[:-2], "level", "runtime")  # compare's condition, in words
FLAGGED = ("worse", "better", "failed", "missing")  # compare's verdicts a page marks


def summaries(f: Frame) -> list[tuple[cmp.Key, Summary, int, int]]:
    """(condition, summary, failed, total) of every figure summarised as a distribution,
    keyed as `compare` keys its conditions (so a verdict names its summary)."""
    rows = cmp.condition_rows(f, True, lambda m: m.summary == "median")
    out = []
    for key, idx in rows.items():
        failed = int(np.sum(~f.ok[idx]))
        out.append((key, summarize_rows(f, idx), failed, int(idx.size)))
    return out


def fits(f: Frame) -> list[dict[str, Any]]:
    """Every memory cost fitted from a pile-up (report/fits.py): the slope per instance
    with its 95% CI, keyed as `compare` keys it."""
    from virtbench.report.fits import cost_fits

    emulated = emulated_runtimes(f)
    out = []
    for (metric, rt), fit in sorted(cost_fits(f).items()):
        key = cmp.fit_key(f, metric, rt)
        out.append(
            {
                **dict(zip(KEY_FIELDS, key, strict=True)),
                "label": cmp.label(key),
                "figure": cmp.label(key[:-1]),
                "headline": True,
                "emulated": rt in emulated,
                "slope": fit.slope,
                "ci_low": fit.ci_low,
                "ci_high": fit.ci_high,
                "points": fit.points,
                "groups": fit.groups,
            }
        )
    return out


def headline(key: cmp.Key) -> bool:
    """A figure a trend follows: a worker's own result, not a side one."""
    m = metrics.lookup(key[1], key[3])
    return bool(m.headline and not m.side)


def _summary(key: cmp.Key, s: Summary, failed: int, total: int, emulated: bool) -> dict[str, Any]:
    return {
        **dict(zip(KEY_FIELDS, key, strict=True)),
        "label": cmp.label(key),
        "figure": cmp.label(key[:-1]),
        "headline": headline(key),
        "emulated": emulated,
        **dataclasses.asdict(s),
        "failed": failed,
        "total": total,
    }


def _standing(a: Answer, s: Standing) -> dict[str, Any]:
    vs = a.factor(a.best, s) if s is not a.best else None
    return {
        "runtime": s.runtime,
        "emulated": s.runtime in a.emulated,
        "value": s.value,
        "low": s.low,
        "high": s.high,
        "no_ci": s.no_ci,
        "ok": s.ok,
        "total": s.total,
        "vs_best": None
        if vs is None
        else {"point": vs.point, "low": vs.low, "high": vs.high, "why": vs.why},
    }


def answer(a: Answer) -> dict[str, Any]:
    """An answer: its question, its runtimes best first (each against the best, a ratio
    or a difference as `scale` says, with its CI), the sentences its CIs allow."""
    return {
        "question": a.question,
        "measure": a.measure,
        "metric": a.metric,
        "workload": a.workload,
        "unit": a.unit,
        "scale": a.scale,
        "lower_better": a.lower_better,
        "figure": a.figure,
        "best": a.best.runtime,
        "sentences": a.sentences(),
        "undecided": "" if a.sentences() else a.undecided(),
        "ranked": [_standing(a, s) for s in a.ranked],
        "reference": _standing(a, a.reference) if a.reference else None,
    }


def verdicts(before: Frame, after: Frame) -> tuple[list[dict[str, Any]], str]:
    """`compare`'s verdicts of `after` against `before` (each condition and runtime; Holm's
    correction over all of them), and why there are none ("" when there are)."""
    try:
        rows = cmp.compare(before, after, with_runtime=True)
    except VirtbenchError as e:
        return [], str(e)
    out = []
    for r in rows:
        x, lo, hi = cmp_words.times(r)
        out.append(
            {
                **dict(zip(KEY_FIELDS, r.key, strict=True)),
                "label": cmp.label(r.key),
                "verdict": r.verdict,
                "times": {"point": x, "low": lo, "high": hi},
                "p_adjusted": r.p_adjusted,
                "reason": r.reason,
            }
        )
    return out, ""


def run_facts(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "name": run.name,
        "status": run.status,
        "created": run.created,
        "finished": run.finished,
        "host": run.host,
        "fleet": run.fleet,
        "argv": run.argv,
        "environment": run.environment,
    }


def run_json(
    run: RunRecord,
    f: Frame,
    found: list[Answer],
    sums: list[tuple[cmp.Key, Summary, int, int]],
    previous: dict[str, Any] | None,
) -> dict[str, Any]:
    """The run's file: its facts, testbed, counts, summaries (`summaries(f)`), fitted
    costs, answers and `previous` ({run, verdicts, none: why there are none} or null)."""
    emulated = emulated_runtimes(f)
    kept = f.take(~f.warmup)
    out: dict[str, Any] = clean(
        {
            "$schema": "../schema/site.schema.json",
            "kind": "run",
            "format": 1,
            "virtbench": __version__,
            "run": run_facts(run),
            "testbed": {
                "id": testbed.testbed_id(run.environment),
                "describe": testbed.describe(run.environment),
            },
            "counts": {
                "samples": int(kept.ok.size),
                "warmups": int(np.sum(f.warmup)),
                "failed": int(np.sum(~kept.ok)),
            },
            "summaries": [_summary(k, s, bad, n, k[-1] in emulated) for k, s, bad, n in sums],
            "fits": fits(f),
            "answers": [answer(a) for a in found],
            "previous": previous,
        }
    )
    return out


def dumps(doc: dict[str, Any]) -> str:
    """JSON as the site writes it: no NaN (null), keys in a stable order, compact (one
    line: json's fast encoder; a browser's viewer lays it out)."""
    return json.dumps(doc, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n"
