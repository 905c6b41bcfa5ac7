"""`exec`, `pause` and `snapshot` recover injected truth on the fake runtime: each
operation's time, an instance that is not paused, output that does not come back whole,
a restored instance that is not the one checkpointed, and a runtime that cannot (how each
driver does them: test_sandbox_drivers.py)."""

from __future__ import annotations

import pytest
from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

from virtbench import spec as specmod
from virtbench.errors import SpecError

OPS = Truth(
    {
        "fa": RuntimeTruth(
            exec_ms=5.0,
            exec_per_mib_ms=2.0,
            pause_ms=3.0,
            resume_ms=2.0,
            resume_ready_ms=4.0,
            checkpoint_ms=8.0,
            image_mib=3.0,
            restore_ms=6.0,
            restore_ready_ms=9.0,
        ),
        "fb": RuntimeTruth(exec_ms=None, pause_ms=None, checkpoint_ms=None),
    },
    seed=2,
)


def by(samples, metric, runtime):
    return [x for x in samples if x.metric == metric and x.runtime == runtime]


def test_exec_times_each_command_and_says_who_cannot(tmp_path, monkeypatch):
    exp = {"type": "exec", "runs": 2, "count": 7}
    with fake_session(tmp_path, OPS, ["fa", "fb"], exp) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)
        events = [msg for _, _, msg in s.store.events(s.run_id)]
        assert world.running == {}
    true = [x.value for x in by(samples, "exec.true", "fa")]
    big = [x.value for x in by(samples, "exec.stdout_1mib", "fa")]
    assert len(true) == len(big) == 14
    assert all(abs(v - 5.0) < 1e-3 for v in true), true  # 5 ms, a line's bytes are ~0
    assert all(abs(v - 7.0) < 1e-3 for v in big), big  # 5 ms + 2 ms per MiB
    assert {x.params["command"] for x in by(samples, "exec.stdout_1mib", "fa")} == {
        "/bin/vb-hello 1048576"
    }
    no = by(samples, "exec.true", "fb") + by(samples, "exec.stdout_1mib", "fb")
    assert len(no) == 2 and all(
        x.value is None and "fb cannot: fake: no exec" in x.error for x in no
    )
    assert any("exec: fb cannot" in e for e in events), events


def test_exec_output_that_does_not_come_back_whole_is_a_failure(tmp_path, monkeypatch):
    short = Truth({"fa": RuntimeTruth(exec_lost_bytes=10)})
    exp = {"type": "exec", "runs": 1, "count": 3}
    with fake_session(tmp_path, short, ["fa"], exp) as (s, _):
        run(s)
        samples = s.store.samples(s.run_id)
    line = by(samples, "exec.true", "fa")
    assert len(line) == 3 and all(x.value is None for x in line)
    assert "11 bytes came back of the 21 written" in line[0].error
    assert not by(samples, "exec.stdout_1mib", "fa")  # the instance's failure ended it


def test_pause_times_pause_resume_and_the_next_heartbeat(tmp_path, monkeypatch):
    exp = {"type": "pause", "runs": 1, "cycles": 4, "hold_s": 0.01}
    with fake_session(tmp_path, OPS, ["fa", "fb"], exp) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)
        assert world.running == {}
    pause = [x.value for x in by(samples, "pause.pause", "fa")]
    resume = [x.value for x in by(samples, "pause.resume", "fa")]
    ready = [x.value for x in by(samples, "pause.resume_to_ready", "fa")]
    assert len(pause) == len(resume) == len(ready) == 4
    # the calls sleep their truth (a loaded host wakes late, never early)
    assert all(3.0 <= v < 50.0 for v in pause), pause
    assert all(2.0 <= v < 50.0 for v in resume), resume
    # the heartbeat is stamped 4 ms after the resume call began: recovered to the clock
    assert all(abs(v - 4.0) < 0.5 for v in ready), ready
    assert [x.params["cycle"] for x in by(samples, "pause.pause", "fa")] == [0, 1, 2, 3]
    no = by(samples, "pause.resume_to_ready", "fb")
    assert len(no) == 1 and "fb cannot: fake: no pause" in no[0].error


def test_a_pause_that_does_not_stop_the_heartbeat_fails(tmp_path, monkeypatch):
    leaky = Truth({"fa": RuntimeTruth(beats_while_paused=True)})
    exp = {"type": "pause", "runs": 1, "cycles": 2, "hold_s": 0.01}
    with fake_session(tmp_path, leaky, ["fa"], exp) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)
        assert world.running == {}
    got = by(samples, "pause.resume_to_ready", "fa")
    assert got and all(x.value is None and "not paused" in x.error for x in got), got


def test_snapshot_times_checkpoint_restore_and_the_same_instance(tmp_path, monkeypatch):
    exp = {"type": "snapshot", "runs": 3, "gone_s": 0.01}
    with fake_session(tmp_path, OPS, ["fa", "fb"], exp) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)
        data = s.runtimes["fa"].ctx.paths.data_dir(s.run_id)
        assert world.running == {}
        assert not data.exists()  # every image removed, and the run's directory
    ckpt = [x.value for x in by(samples, "snapshot.checkpoint", "fa")]
    size = [x.value for x in by(samples, "snapshot.size", "fa")]
    restore = [x.value for x in by(samples, "snapshot.restore", "fa")]
    ready = [x.value for x in by(samples, "snapshot.restore_to_ready", "fa")]
    assert len(ckpt) == len(size) == len(restore) == len(ready) == 3
    # slept, and 3 MiB written; a loaded host may add a little, never a unit's worth
    assert all(8.0 <= v < 1000.0 for v in ckpt), ckpt
    assert all(abs(v - 3.0) < 0.01 for v in size), size  # du of the 3 MiB image
    assert all(6.0 <= v < 1000.0 for v in restore), restore
    assert all(abs(v - 9.0) < 0.5 for v in ready), ready
    no = by(samples, "snapshot.size", "fb")
    assert len(no) == 1 and "fb cannot: fake: no checkpoint" in no[0].error


def test_a_restore_that_brings_back_another_instance_fails(tmp_path, monkeypatch):
    stranger = Truth({"fa": RuntimeTruth(restores_a_stranger=True)})
    exp = {"type": "snapshot", "runs": 1, "gone_s": 0.01}
    with fake_session(tmp_path, stranger, ["fa"], exp) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)
        assert world.running == {}
    got = by(samples, "snapshot.restore_to_ready", "fa")
    assert len(got) == 1 and got[0].value is None
    assert "not the same instance" in got[0].error, got[0].error


def test_copies_restored_at_once_from_one_checkpoint_recover_their_truth(tmp_path):
    """restore_many: 6 copies of one checkpoint restored together; the k-th to come back
    beats 9 + 5(k-1) ms after its call, two never beat: recovered per copy, as the
    batch's wall time, and as two failed copies with their reason."""
    many = Truth(
        {
            "fa": RuntimeTruth(copy_stagger_ms=5.0, copies_lost=2),
            "fb": RuntimeTruth(checkpoint_ms=None),
        }
    )
    exp = {"type": "snapshot", "runs": 1, "gone_s": 0.01, "restore_many": 6, "timeout_s": 0.5}
    with fake_session(tmp_path, many, ["fa", "fb"], exp) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)
        assert world.running == {}  # every copy stopped
    copies = by(samples, "snapshot.many_to_ready", "fa")
    assert len(copies) == 6 and len({x.params["copy"] for x in copies}) == 6
    assert all(x.params["copies"] == 6 for x in copies)
    got = sorted(x.value for x in copies if x.value is not None)
    want = [9.0 + 5.0 * k for k in range(2, 6)]  # the first two restored never beat
    # a sleep ends late on a loaded host, never early: tight below, generous above
    assert len(got) == 4 and all(w - 1 < g < w + 20 for g, w in zip(got, want, strict=True)), got
    lost = [x.error for x in copies if x.value is None]
    assert len(lost) == 2 and all("no heartbeat in 0.5 s after its restore" in e for e in lost)
    (failed,) = by(samples, "snapshot.many_failed", "fa")
    assert failed.value == 2
    (wall,) = by(samples, "snapshot.many_wall", "fa")
    assert wall.value is None and "2 of 6 copies did not beat" in wall.error
    # the instance checkpointed was measured as ever
    assert len([x for x in by(samples, "snapshot.restore_to_ready", "fa") if x.value]) == 1
    no = by(samples, "snapshot.many_to_ready", "fb")
    assert len(no) == 1 and "fb cannot: fake: no checkpoint" in no[0].error


def test_copies_all_beating_give_the_batchs_wall_time(tmp_path):
    many = Truth({"fa": RuntimeTruth(copy_stagger_ms=4.0)})
    exp = {"type": "snapshot", "runs": 2, "gone_s": 0.01, "restore_many": 5}
    with fake_session(tmp_path, many, ["fa"], exp) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)
        assert world.running == {}
    walls = [x.value for x in by(samples, "snapshot.many_wall", "fa")]
    # the last of 5 beats 9 + 4 * 4 = 25 ms after its call, all calls issued together; one
    # after the other, five copies of 9 ms or more would take 45 ms or more (the fake
    # sleeps: a loaded machine adds its delays, hence the room above 25)
    assert len(walls) == 2 and all(24.5 < w < 45.0 for w in walls), walls
    assert [x.value for x in by(samples, "snapshot.many_failed", "fa")] == [0, 0]


def test_copies_that_cannot_be_told_apart_are_said_so():
    from virtbench.runtimes.controls import Snapshot

    class Runsc(Snapshot):
        def problem(self):
            return None

    assert "cannot be told apart" in Runsc(None).copies_problem()
    assert Snapshot(None).copies_problem() == "it has no checkpoint/restore"


@pytest.mark.parametrize(
    ("table", "field"),
    [
        ({"type": "exec", "count": 0}, "count"),
        ({"type": "exec", "stdout_bytes": 0}, "stdout_bytes"),
        ({"type": "pause", "hold_s": 0}, "hold_s"),
        ({"type": "snapshot", "runs": 0}, "runs"),
        ({"type": "snapshot", "restore_many": -1}, "restore_many"),
    ],
)
def test_bad_options_are_one_line_errors_naming_the_field(table, field):
    with pytest.raises(SpecError) as err:
        specmod.parse({"name": "x", "runtimes": ["crun"], "experiment": [table]}, "t")
    assert field in str(err.value) and "\n" not in str(err.value).strip(), err.value


def test_an_instance_that_does_not_start_is_a_failed_sample_of_each_figure(tmp_path, monkeypatch):
    bad = Truth({"fa": RuntimeTruth(needs_mib=512)})  # its 64 MiB instances fail to start
    exp = {"type": "pause", "runs": 1, "cycles": 2, "hold_s": 0.01}
    with fake_session(tmp_path, bad, ["fa"], exp, instance={"memory_mib": 64}) as (s, world):
        run(s)
        samples = s.store.samples(s.run_id)
        assert world.running == {}
    for m in ("pause.pause", "pause.resume", "pause.resume_to_ready"):
        got = by(samples, m, "fa")
        assert len(got) == 1 and got[0].value is None and "out of memory" in got[0].error


def test_the_report_draws_bars_and_answers_for_each_operation(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from virtbench.cli import app
    from virtbench.report import sections
    from virtbench.report.answers import answers

    fa = RuntimeTruth(exec_ms=5.0, resume_ready_ms=4.0, restore_ready_ms=9.0)
    fb = RuntimeTruth(exec_ms=50.0, resume_ready_ms=40.0, restore_ready_ms=90.0)
    fc = RuntimeTruth(exec_ms=None, pause_ms=None, checkpoint_ms=None)
    truth = Truth({"fa": fa, "fb": fb, "fc": fc})
    exps = [
        {"type": "exec", "runs": 2, "count": 3},
        {"type": "pause", "runs": 2, "cycles": 2, "hold_s": 0.01},
        {"type": "snapshot", "runs": 2, "gone_s": 0.01},
    ]
    with fake_session(tmp_path, truth, ["fa", "fb", "fc"], exps) as (s, _):
        run(s)
        samples = s.store.samples(s.run_id)
        s.store.finish_run(s.run_id, "completed")
        frame = s.store.frame(s.run_id)
    figs = {p.name: p for p in sections.figures(samples, ["fa", "fb", "fc"])}
    for name in ("exec-latency", "pause-resume", "snapshot-restore"):
        (ax,) = figs[name].fig.axes
        assert [t.get_text() for t in ax.get_yticklabels()] == ["fa", "fb", "fc"]
        texts = [t.get_text() for t in ax.texts]
        assert len(texts) == 1 and texts[0].startswith("cannot: fake: no"), texts  # fc's row
    # exec: fa's one-line bar is at its truth, 5 ms; fb's at 50
    (ax,) = figs["exec-latency"].fig.axes
    widths = sorted(round(b.get_width(), 3) for b in ax.patches)
    assert 5.0 in widths and 50.0 in widths, widths
    found = {a.metric: [x.runtime for x in a.ranked] for a in answers(frame)}
    assert found["exec.true"] == ["fa", "fb"]
    assert found["pause.resume_to_ready"] == ["fa", "fb"]
    assert found["snapshot.restore_to_ready"] == ["fa", "fb"]
    out = tmp_path / "r.html"
    res = CliRunner().invoke(
        app, ["report", "latest", "-o", str(out), "--results", str(tmp_path / "results")]
    )
    assert res.exit_code == 0, res.output
    assert "Checkpoint and restore" in out.read_text()
