"""The JSON Schema (2020-12) of the site's machine-readable files: a run's
`runs/ID.json` (kind "run") and an entry's `latest.json` (kind "latest": the same, with
its entry). Published as schema/site.schema.json (`virtbench site --schema`); a number
that could not be worked out is null, never left out."""

from __future__ import annotations

import json
from typing import Any

from virtbench.report.compare import VERDICT_STYLE
from virtbench.site.data import KEY_FIELDS, SCHEMA_ID

NUM = {"type": ["number", "null"]}
INT = {"type": "integer", "minimum": 0}
STR = {"type": "string"}
BOOL = {"type": "boolean"}


def _object(props: dict[str, Any], *, extra: bool = False) -> dict[str, Any]:
    return {
        "type": "object",
        "required": sorted(props),
        "properties": props,
        "additionalProperties": extra,
    }


KEY = {k: {**STR, "description": f"the condition's {k}"} for k in KEY_FIELDS}
SUMMARY = _object(
    {
        **KEY,
        "label": {**STR, "description": "the condition in words, with its runtime"},
        "figure": {**STR, "description": "the condition in words, without its runtime"},
        "headline": {**BOOL, "description": "a worker's own result (trends follow these)"},
        "emulated": {**BOOL, "description": "measured under emulation (QEMU TCG)"},
        "n": INT,
        "median": NUM,
        "mean": NUM,
        "sd": NUM,
        "cv": NUM,
        "ci_low": {**NUM, "description": "95% CI of the median (null: too few units)"},
        "ci_high": NUM,
        "minimum": NUM,
        "maximum": NUM,
        "outliers": INT,
        "units": {**INT, "description": "independent units the values come from"},
        "ci_method": STR,
        "failed": INT,
        "total": INT,
    }
)
FIT = _object(
    {
        **KEY,
        "label": STR,
        "figure": STR,
        "headline": BOOL,
        "emulated": BOOL,
        "slope": {**NUM, "description": "the cost per instance: a slope, not a median"},
        "ci_low": {**NUM, "description": "its 95% CI (null: none)"},
        "ci_high": NUM,
        "points": INT,
        "groups": {**INT, "description": "the pile-ups it was fitted over"},
    }
)
INTERVAL = _object({"point": NUM, "low": NUM, "high": NUM})
STANDING = _object(
    {
        "runtime": STR,
        "emulated": BOOL,
        "value": NUM,
        "low": NUM,
        "high": NUM,
        "no_ci": {**STR, "description": "what stands for the CI where there is none"},
        "ok": INT,
        "total": {**INT, "description": "measurements counted (0: not counted)"},
        "vs_best": {
            "description": "against the best: a ratio or a difference as `scale` says",
            "oneOf": [{"type": "null"}, _object({**INTERVAL["properties"], "why": STR})],
        },
    }
)
ANSWER = _object(
    {
        "question": STR,
        "measure": STR,
        "metric": STR,
        "workload": STR,
        "unit": STR,
        "scale": {"enum": ["ratio", "difference"]},
        "lower_better": BOOL,
        "figure": STR,
        "best": STR,
        "sentences": {"type": "array", "items": STR},
        "undecided": STR,
        "ranked": {"type": "array", "items": {"$ref": "#/$defs/standing"}},
        "reference": {"oneOf": [{"type": "null"}, {"$ref": "#/$defs/standing"}]},
    }
)
VERDICT = _object(
    {
        **KEY,
        "label": STR,
        "verdict": {"enum": list(VERDICT_STYLE)},
        "times": {**INTERVAL, "description": "the run in the previous one's terms, >1 worse"},
        "p_adjusted": NUM,
        "reason": {**STR, "description": "why there is no ratio"},
    }
)
PREVIOUS = _object(
    {
        "run": STR,
        "verdicts": {"type": "array", "items": {"$ref": "#/$defs/verdict"}},
        "none": {**STR, "description": "why there are no verdicts"},
    }
)
RUN = _object(
    {
        "id": STR,
        "name": STR,
        "status": {"enum": ["completed", "failed", "interrupted", "crashed"]},
        "created": {"type": "number"},
        "finished": NUM,
        "host": STR,
        "fleet": STR,
        "argv": {"type": "array", "items": STR},
        "environment": {"type": "object"},
    }
)


def schema() -> dict[str, Any]:
    props = {
        "$schema": STR,
        "kind": {"enum": ["run", "latest"]},
        "format": {"const": 1},
        "virtbench": STR,
        "run": RUN,
        "testbed": _object({"id": STR, "describe": STR}),
        "counts": _object({"samples": INT, "warmups": INT, "failed": INT}),
        "summaries": {"type": "array", "items": {"$ref": "#/$defs/summary"}},
        "fits": {"type": "array", "items": {"$ref": "#/$defs/fit"}},
        "answers": {"type": "array", "items": {"$ref": "#/$defs/answer"}},
        "previous": {"oneOf": [{"type": "null"}, PREVIOUS]},
        "entry": _object({"name": STR, "host": STR, "testbed": STR}),
    }
    required = sorted(set(props) - {"entry"})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "virtbench site: a run's figures (runs/ID.json, latest.json)",
        "type": "object",
        "required": required,
        "properties": props,
        "additionalProperties": False,
        "$defs": {
            "summary": SUMMARY,
            "fit": FIT,
            "standing": STANDING,
            "answer": ANSWER,
            "verdict": VERDICT,
        },
    }


def schema_text() -> str:
    return json.dumps(schema(), indent=2) + "\n"
