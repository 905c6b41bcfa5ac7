"""A run of the sandbox questions leads with them: time to interactive (one by one, at 1
and at the largest level, with success rates), a command inside, back from a pause, back
from disk against dirty memory, memory per instance with its liveness; `compare --json`
carries every one of those figures."""

from __future__ import annotations

from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

from virtbench.report.answers import answers
from virtbench.report.bmf import of_rows
from virtbench.report.compare import compare
from virtbench.store.frame import as_frame

SPEC = [
    {"type": "tti", "sequential": 5, "staggered": 0, "levels": [1, 8], "runs": 5, "settle_s": 0},
    {"type": "exec", "runs": 5, "count": 3},
    {"type": "pause", "runs": 5, "cycles": 2, "hold_s": 0.01},
    {"type": "snapshot", "runs": 5, "dirty_mib": [1, 16]},
    {
        "type": "density",
        "instances": 6,
        "instances_per_benchmark": 3,
        "memory_settle_s": 0,
        "liveness_probes": 4,
    },
]


def sandbox_run(tmp_path, seed: int):
    truth = Truth(
        {
            "fa": RuntimeTruth(ready_ms=20.0, exec_ms=5.0, restore_per_mib_ms=0.1),
            "fb": RuntimeTruth(
                ready_ms=40.0,
                exec_ms=9.0,
                restore_per_mib_ms=0.3,
                resume_ready_ms=8.0,
                restore_ready_ms=20.0,
            ),
        },
        seed=seed,
    )
    with fake_session(tmp_path, truth, ["fa", "fb"], SPEC) as (s, world):
        run(s)
        samples = [x for x in s.store.samples(s.run_id) if not x.warmup]
        assert world.running == {}
    return samples


def test_a_sandbox_run_leads_with_its_questions_and_compare_carries_them(tmp_path):
    a = sandbox_run(tmp_path / "a", 1)
    found = answers(as_frame(a))
    said = [q.question for q in found]
    assert said[:7] == [
        "Fastest to interactive, one by one",
        "Fastest to interactive, 1 at once",
        "Fastest to interactive, 8 at once",
        "Fastest command in a running instance",
        "Fastest back from a pause",
        "Fastest back from a checkpoint, 16 MiB dirtied",
        "Least restore time per memory dirtied",
    ], said
    assert [(s.ok, s.total) for s in found[0].ranked] == [(25, 25), (25, 25)]  # the success
    memory = next(q for q in found if q.question == "Least memory per instance")
    assert memory.note.startswith("ranked by ")  # its sharpest estimate, and why
    assert memory.note.endswith("; probed instances that answered: fa 4 of 4, fb 4 of 4")
    b = sandbox_run(tmp_path / "b", 2)
    rows = compare(a, b, with_runtime=True)
    compared = {r.key[1] for r in rows}
    for metric in (
        "tti.interactive@seq",
        "tti.interactive@1",
        "tti.interactive@8",
        "tti.wall@8",
        "exec.true",
        "pause.resume_to_ready",
        "snapshot.restore_to_ready@16MiB",
        "density.liveness",
    ):
        assert metric in compared, metric
    js = of_rows(rows, "b")
    assert any(k.startswith("time to interactive at 8 ") for k in js), sorted(js)
    assert any(k.startswith("back from a snapshot at 16MiB ") for k in js), sorted(js)


def test_a_runtime_that_cannot_run_a_command_is_named_not_pooled_as_failures(tmp_path):
    """A runtime with no exec gets no 0% success row: the table names it and says why."""
    from rich.console import Console

    from virtbench.report.sandbox import pooled, tti_table

    truth = Truth({"fa": RuntimeTruth(exec_ms=5.0), "fc": RuntimeTruth(exec_ms=None)}, seed=3)
    spec = [
        {"type": "tti", "sequential": 3, "staggered": 0, "levels": [2], "runs": 2, "settle_s": 0}
    ]
    with fake_session(tmp_path, truth, ["fa", "fc"], spec) as (s, _world):
        run(s)
        f = as_frame(list(s.store.samples(s.run_id)))
    assert {b.runtime for b in pooled(f)} == {"fa"}
    console = Console(width=200, record=True)
    console.print(tti_table("tti", f, ["fa", "fc"]))
    assert "fc cannot: fake: no exec" in console.export_text()
