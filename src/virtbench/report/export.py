"""Exports of a stored run, and the JSON Schema they follow (schema/export.schema.json).

NDJSON: one JSON object per line, each with a `record` field saying what it is:
  {"record": "run", ...}      first: id, name, times, status, argv, spec, environment, artifacts
  {"record": "metric", ...}   each figure the samples hold, as virtbench.metrics declares it: unit,
                              direction, what it includes, lower bound, resolution, ...
  {"record": "sample", ...}   every sample in the order measured, with its `run_id`
  {"record": "event", ...}    warnings, skips and guard stops, in time order
CSV: the samples only, one row each, `params` as a JSON object in one column.
Failed measurements have `value` null (NDJSON) or empty (CSV) and a non-empty `error`;
warm-ups are exported with `warmup` true. Non-finite numbers become null: JSON has none.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import itertools
import json
import math
from collections.abc import Callable, Iterator
from typing import IO, Any

import numpy as np

from virtbench import metrics
from virtbench.report import twocpu
from virtbench.store import Store
from virtbench.store.frame import Frame
from virtbench.store.records import RunRecord, Sample

SCHEMA_ID = "https://virtbench.dev/schema/export.schema.json"
FORMATS = ("ndjson", "csv")
SAMPLE_FIELDS = ["run_id", *(f.name for f in dataclasses.fields(Sample))]


def clean(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [clean(v) for v in x]
    return x


def lines(store: Store, run_id: str) -> Iterator[dict[str, Any]]:
    """The run's NDJSON records, in order."""
    run = store.run(run_id)
    yield {"record": "run", **clean(dataclasses.asdict(run))}
    samples = store.samples(run.id)
    for name, workload in dict.fromkeys((s.metric, s.workload) for s in samples):
        yield {"record": "metric", "run_id": run.id, **declared(name, workload)}
    for s in samples:
        yield {"record": "sample", "run_id": run.id, **clean(dataclasses.asdict(s))}
    for t, level, message in store.events(run.id):
        yield {"record": "event", "run_id": run.id, "t": t, "level": level, "message": message}


METRIC_FIELDS = {
    "metric": {"type": "string", "description": "the name as stored in samples"},
    "workload": {"type": "string"},
    "unit": {"type": "string", "description": '"" where the samples carry their own'},
    "direction": {"enum": ["lower", "higher", None]},
    "includes": {"type": "string", "description": "what the figure includes"},
    "lower_bound": {"type": ["number", "null"]},
    "resolution": {"type": ["number", "null"], "description": "in `unit`; null: unknown"},
    "repeated": {"type": "boolean", "description": "repeated measurements of one thing"},
    "summary": {
        "type": "string",
        "description": "median (a distribution), series (values at "
        "their point), or fit (the slope of a series, computed when read; never "
        "stored)",
    },
    "compared": {"type": "boolean", "description": "compared across runtimes"},
}


def declared(name: str, workload: str) -> dict[str, Any]:
    """What virtbench.metrics declares of the figure `name` of `workload`."""
    m = metrics.lookup(name, workload)
    return clean(
        {
            "metric": name,
            "workload": workload,
            "unit": m.unit,
            "direction": m.direction,
            "includes": m.includes,
            "lower_bound": m.lower_bound,
            "resolution": m.resolution,
            "repeated": m.repeated,
            "summary": m.summary,
            "compared": m.compared,
        }
    )


def write_ndjson(store: Store, run_id: str, out: IO[str]) -> int:
    """The run's records as `lines` gives them, each JSON object on a line of its own; the
    samples from the run's frame (the same bytes json.dumps writes, made per distinct run
    of text fields and per number), formatted on two CPUs."""
    run = store.run(run_id)
    out.write(json.dumps({"record": "run", **clean(dataclasses.asdict(run))}) + "\n")
    f = store.frame(run.id)
    pairs = [key for key, _ in f.groups("metric", "workload")]
    for name, workload in pairs:
        out.write(
            json.dumps({"record": "metric", "run_id": run.id, **declared(name, workload)}) + "\n"
        )
    chunks = [
        functools.partial(_json_lines, f, run.id, start) for start in range(0, len(f), _CSV_CHUNK)
    ]
    for text in twocpu.in_order(chunks):
        out.write(text)
    events = store.events(run.id)
    for t, level, message in events:
        rec = {"record": "event", "run_id": run.id, "t": t, "level": level, "message": message}
        out.write(json.dumps(rec, allow_nan=False) + "\n")
    return 1 + len(pairs) + len(f) + len(events)


# A sample's line: text fields in runs (one JSON piece per distinct combination), numbers
# between them; each run's piece starts with the key that follows the number before it.
_JSON_TEXT = (
    ("experiment", "metric"),
    ("unit", "direction", "runtime", "workload"),
    ("attacker", "placement"),
    ("error", "params", "host"),
)


def _json_piece(fields: tuple[str, ...], key: tuple[str, ...]) -> str:
    parts = []
    for name, text in zip(fields, key, strict=True):
        value: Any = text
        if name == "params":  # its label is the params' JSON text, sorted, as stored
            value = clean(json.loads(text))
        parts.append(f"{json.dumps(name)}: {json.dumps(value, allow_nan=False)}")
    return ", ".join(parts)


def _json_lines(f: Frame, run_id: str, start: int) -> str:
    """The NDJSON lines of the frame's rows from `start` (at most _CSV_CHUNK of them)."""
    part = f.take(np.arange(start, min(len(f), start + _CSV_CHUNK)))
    head = '{"record": "sample", "run_id": ' + json.dumps(run_id) + ", "
    a, b, c, d = (
        _pieces(part, fields, functools.partial(_json_piece, fields)) for fields in _JSON_TEXT
    )
    values = [v or "null" for v in _floats(part.value)]
    ts = [t or "null" for t in _floats(part.t)]
    rep, bg = map(str, part.repetition.tolist()), map(str, part.background.tolist())
    truth = ("false", "true")
    warm = [truth[x] for x in part.warmup.tolist()]
    emu = [truth[x] for x in part.emulated.tolist()]
    r = itertools.repeat
    return "".join(
        map(
            "".join,
            zip(
                r(head),
                a,
                r(', "value": '),
                values,
                r(", "),
                b,
                r(', "repetition": '),
                rep,
                r(', "background": '),
                bg,
                r(", "),
                c,
                r(', "warmup": '),
                warm,
                r(', "emulated": '),
                emu,
                r(", "),
                d,
                r(', "t": '),
                ts,
                r("}\n"),
                strict=False,  # the repeats are endless
            ),
        )
    )


# CSV columns in runs of text fields, each run written as one pre-quoted piece per distinct
# combination (a run's samples share a few), the numbers between them formatted per row
_CSV_TEXT = (
    ("experiment", "metric"),
    ("unit", "direction", "runtime", "workload"),
    ("attacker", "placement"),
    ("error", "params", "host"),
)
_CSV_CHUNK = 100_000


def _pieces(
    f: Frame, fields: tuple[str, ...], render: str | Callable[[tuple[str, ...]], str]
) -> list[str]:
    """Per row, its text `fields` rendered: by `render`, or (a string) as `render`, then
    the CSV of the fields and a comma."""
    codes, texts = [], []
    for key, rows in f.groups(*fields):
        if callable(render):
            text = render(key)
        else:
            buf = io.StringIO()
            csv.writer(buf, lineterminator="").writerow(key)
            text = render + buf.getvalue() + ","
        codes.append(rows)
        texts.append(text)
    out = np.empty(len(f), dtype=object)
    for rows, text in zip(codes, texts, strict=True):
        out[rows] = text
    return out.tolist()


def _floats(x: np.ndarray) -> list[str]:
    """Numbers as Python prints them (as csv does), "" for none (NaN, infinities)."""
    out = list(map(repr, x.tolist()))
    for i in np.flatnonzero(~np.isfinite(x)).tolist():
        out[i] = ""
    return out


def _csv_lines(f: Frame, run_id: str, start: int) -> str:
    """The CSV lines of the frame's rows from `start` (at most _CSV_CHUNK of them)."""
    part = f.take(np.arange(start, min(len(f), start + _CSV_CHUNK)))
    a = _pieces(part, _CSV_TEXT[0], f"{run_id},")
    b, c, d = (_pieces(part, fields, "") for fields in _CSV_TEXT[1:])
    values, ts = _floats(part.value), _floats(part.t)
    rep, bg = map(str, part.repetition.tolist()), map(str, part.background.tolist())
    warm = map(str, part.warmup.astype(int).tolist())
    emu = map(str, part.emulated.astype(int).tolist())
    comma = itertools.repeat(",")
    # one line per row, joined in C: pieces end in a comma where one follows
    return "".join(
        map(
            "".join,
            zip(
                a,
                values,
                comma,
                b,
                rep,
                comma,
                bg,
                comma,
                c,
                warm,
                comma,
                emu,
                comma,
                d,
                ts,
                itertools.repeat("\n"),
            ),
        )
    )


def write_csv(store: Store, run_id: str, out: IO[str]) -> int:
    """The run's samples as CSV, in the order measured: from its frame, each distinct
    run of text fields quoted once (csv's own quoting), numbers as Python prints them."""
    run = store.run(run_id)
    out.write(",".join(SAMPLE_FIELDS) + "\n")
    f = store.frame(run.id)
    starts = range(0, len(f), _CSV_CHUNK)
    chunks = [functools.partial(_csv_lines, f, run.id, start) for start in starts]
    for text in twocpu.in_order(chunks):  # formatted on two CPUs, written in order
        out.write(text)
    return len(f)


def _strict(schema: dict[str, Any], record: str, extra: dict[str, Any]) -> dict[str, Any]:
    """A dataclass's schema with the `record` tag and `extra` fields, every field required
    (exports always write all of them) and nothing else allowed."""
    props = {"record": {"const": record}, **extra, **schema.get("properties", {})}
    out = {k: v for k, v in schema.items() if k not in ("properties", "required")}
    return {**out, "properties": props, "required": list(props), "additionalProperties": False}


def schema() -> dict[str, Any]:
    """The JSON Schema of one NDJSON export line (a run, a sample or an event)."""
    from pydantic import TypeAdapter  # only the schema needs it

    run_id = {"type": "string", "pattern": "^[a-z0-9]{6}$", "description": "run id"}
    sample = TypeAdapter(Sample).json_schema()
    run = TypeAdapter(RunRecord).json_schema()
    event = {
        "title": "Event",
        "description": "A warning, skip or guard stop the run recorded, with its time.",
        "type": "object",
        "properties": {
            "t": {"type": "number", "description": "Unix time"},
            "level": {"type": "string", "enum": ["info", "warning", "error"]},
            "message": {"type": "string"},
        },
    }
    metric = {
        "title": "Metric",
        "description": "A figure the run's samples hold, as virtbench declares it.",
        "type": "object",
        "properties": METRIC_FIELDS,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "virtbench export line",
        "description": (
            "One line of `virtbench export RUN --format ndjson`: the run first, then the "
            "declaration of each figure its samples hold, then its samples, then its "
            "events. CSV exports carry the sample fields as columns."
        ),
        "oneOf": [
            {"$ref": "#/$defs/run"},
            {"$ref": "#/$defs/metric"},
            {"$ref": "#/$defs/sample"},
            {"$ref": "#/$defs/event"},
        ],
        "$defs": {
            "run": _strict(run, "run", {}),
            "metric": _strict(metric, "metric", {"run_id": run_id}),
            "sample": _strict(sample, "sample", {"run_id": run_id}),
            "event": _strict(event, "event", {"run_id": run_id}),
        },
    }


def schema_text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"
