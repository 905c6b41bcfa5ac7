"""Exports: every NDJSON line validates against the published JSON Schema, CSV has one
row per sample, and the published schema file is the one the code generates."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import jsonschema
from tests.fakerun import fake_run
from typer.testing import CliRunner

from virtbench.cli import app
from virtbench.report import export
from virtbench.store import Store

runner = CliRunner()
PUBLISHED = Path(__file__).resolve().parents[2] / "schema" / "export.schema.json"


def test_published_schema_is_current():
    assert json.loads(PUBLISHED.read_text()) == export.schema(), (
        "schema/export.schema.json is stale: virtbench export --schema > schema/export.schema.json"
    )


def test_ndjson_lines_validate_and_keep_everything(tmp_path):
    store = Store(tmp_path)
    rid = fake_run(store, "aaaaa1", {"crun": 1.0, "runc": 1.2}, experiments=("boot", "throughput"))
    res = runner.invoke(app, ["export", rid, "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in res.stdout.splitlines()]
    validator = jsonschema.Draft202012Validator(export.schema())
    for rec in recs:
        validator.validate(rec)
    assert recs[0]["record"] == "run" and recs[0]["id"] == rid
    samples = [r for r in recs if r["record"] == "sample"]
    assert len(samples) == len(store.samples(rid))
    failed = [r for r in samples if r["error"]]
    assert failed and all(r["value"] is None for r in failed)
    assert any(r["warmup"] for r in samples)
    assert any(r["record"] == "event" for r in recs)
    # every figure the samples hold is declared once, as the registry has it
    declared = {(r["metric"], r["workload"]): r for r in recs if r["record"] == "metric"}
    assert set(declared) == {(r["metric"], r["workload"]) for r in samples}
    boot = declared[("boot.spawn_to_exit", "hello")]
    assert boot["unit"] == "ms" and boot["direction"] == "lower" and boot["lower_bound"] == 0
    assert boot["repeated"] and "exited" in boot["includes"] and boot["resolution"] > 0
    order = [r["record"] for r in recs]
    assert order.index("metric") < order.index("sample")
    bad = {**samples[0], "value": "fast"}
    assert not validator.is_valid(bad)  # the schema can fail


def test_csv_has_a_row_per_sample_and_params_as_json(tmp_path):
    store = Store(tmp_path)
    rid = fake_run(store, "bbbbb2", {"crun": 1.0}, experiments=("throughput",))
    out = tmp_path / "x.csv"
    res = runner.invoke(
        app, ["export", rid, "--format", "csv", "-o", str(out), "--results", str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == len(store.samples(rid)) and list(rows[0]) == export.SAMPLE_FIELDS
    assert json.loads(rows[0]["params"])["level"] == 1
    assert any(r["value"] == "" and r["error"] for r in rows)


def test_export_errors_are_one_line(tmp_path):
    Store(tmp_path)
    res = runner.invoke(app, ["export", "zzzzz9", "--results", str(tmp_path)])
    assert res.exit_code == 2 and "run 'zzzzz9' not found" in res.output
    res = runner.invoke(app, ["export", "zzzzz9", "--format", "xml", "--results", str(tmp_path)])
    assert res.exit_code == 2 and "--format: 'xml' is not one of ndjson, csv" in res.output
    res = runner.invoke(app, ["export", "--results", str(tmp_path)])
    assert res.exit_code == 2 and "give a run id" in res.output


def test_csv_from_the_frame_is_what_a_row_by_row_writer_writes(tmp_path):
    """The CSV export (written from the run's frame, text runs quoted once) is byte for
    byte what csv.DictWriter writes from the samples one by one, quoting and failed
    values included."""
    import dataclasses

    from virtbench.report.export import SAMPLE_FIELDS, write_csv
    from virtbench.store import Sample

    store = Store(tmp_path)
    rid = fake_run(
        store, "abc123", {"crun": 1.0, "runc": 1.1}, ("boot", "throughput", "isolation"), n=7
    )
    store.reopen_run(rid)
    store.add_sample(
        rid,
        Sample(
            "boot",
            "odd",
            None,
            "ms",
            "lower",
            "crun",
            'a,"b"',
            0,
            error='x, "y"\nz',
            params={"k": "v,w"},
        ),
    )
    got = io.StringIO()
    n = write_csv(store, rid, got)
    want = io.StringIO()
    w = csv.DictWriter(want, fieldnames=SAMPLE_FIELDS, lineterminator="\n")
    w.writeheader()
    for s in store.samples(rid):
        row = dataclasses.asdict(s)
        row["params"] = json.dumps(row["params"], sort_keys=True)
        row["warmup"], row["emulated"] = int(s.warmup), int(s.emulated)
        w.writerow({"run_id": rid, **row})
    assert n == store.count_samples(rid) + sum(1 for s in store.samples(rid) if s.warmup)
    assert got.getvalue() == want.getvalue()


def test_ndjson_from_the_frame_is_what_json_dumps_writes_record_by_record(tmp_path, monkeypatch):
    """The NDJSON export (samples written from the run's frame, in chunks formatted on two
    CPUs) is byte for byte json.dumps of each record `lines` gives: quoting, failed values
    (null), non-finite params (null) and the metric records included."""
    from virtbench.store import Sample

    monkeypatch.setattr(export, "_CSV_CHUNK", 16)  # several chunks: the helper takes some
    store = Store(tmp_path)
    rid = fake_run(
        store, "abc123", {"crun": 1.0, "runc": 1.1}, ("boot", "throughput", "isolation"), n=7
    )
    store.reopen_run(rid)
    params = {"k": "v,w", "inf": math.inf}
    store.add_sample(
        rid,
        Sample(
            "boot",
            "odd",
            None,
            "ms",
            "lower",
            "crun",
            'a,"b"\u00e9',
            0,
            error='x, "y"\nz',
            params=params,
        ),
    )
    store.add_event(rid, "warning", 'a "quoted" event')
    got = io.StringIO()
    n = export.write_ndjson(store, rid, got)
    want = "".join(json.dumps(rec) + "\n" for rec in export.lines(store, rid))
    assert got.getvalue() == want
    assert n == want.count("\n") and '"value": null' in want and '"inf": null' in want
