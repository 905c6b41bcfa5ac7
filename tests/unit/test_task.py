"""`task` recovers injected truth on the fake runtime: each instance's create call -> its
task's exit (ready, then the exec of steps of known times), each step's time as the
instance reported it, the batch's figures, a failed step as a failed sample with its
reason, a runtime without exec said once; and the runner's report is parsed as written."""

from __future__ import annotations

import numpy as np
from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

from virtbench.report.sandbox import pooled
from virtbench.store.frame import as_frame
from virtbench.workloads import task

# ready 20 ms after the create call (CV 5%); the task: 100 + 50 + 5000 + 3000 ms inside,
# its exec 5 ms more
FA = RuntimeTruth(ready_ms=20.0, cv=0.05, exec_ms=5.0)
DONE_MS = 20.0 + 8150.0 + 5.0
EXP = {"type": "task", "sequential": 2, "levels": [3], "runs": 5, "settle_s": 0}


def values(samples, metric, runtime="fa"):
    return np.array(
        [
            x.value
            for x in samples
            if x.metric == metric and x.runtime == runtime and x.value is not None and not x.warmup
        ]
    )


def test_task_recovers_the_injected_steps_and_end_to_end_time(tmp_path):
    with fake_session(tmp_path, Truth({"fa": FA}, seed=3), ["fa"], EXP) as (s, world):
        samples = run(s)
        every = s.store.samples(s.run_id)
        assert world.running == {}  # every instance was stopped
    done = values(samples, "task.done@seq")
    assert len(done) == 10  # 2 one by one x 5 repetitions; the warm-up left apart
    assert abs(np.median(done) - DONE_MS) < 2.0, np.median(done)
    for name, ms in zip(("clone", "venv", "install", "test"), FA.task_steps_ms, strict=True):
        got = values(samples, f"task.{name}@seq")
        assert len(got) == 10 and np.allclose(got, ms), (name, got)
    ready = values(samples, "task.ready@seq")
    assert abs(np.median(ready) - 20.0) < 1.0
    warm = [x for x in every if x.warmup]
    assert warm and {x.metric for x in warm} >= {"task.done@seq", "task.install@seq"}
    # three at once: each instance's figure, and the batch's
    at3 = values(samples, "task.done@3")
    assert len(at3) == 15 and np.all(at3 >= 8150.0)
    wall = values(samples, "task.wall@3")
    assert len(wall) == 5 and np.all(wall >= 8150.0)
    assert list(values(samples, "task.failed@3")) == [0] * 5
    one = next(x for x in samples if x.metric == "task.done@seq" and x.value is not None)
    assert one.params["work_fs"] == "fakefs" and one.params["tests_passed"] == 482
    assert one.params["project"] == "flask 3.0.3"
    f = as_frame(every)
    b = next(b for b in pooled(f, main="task.done") if b.at == "seq")
    assert b.ok == b.n == 10 and b.tails["p50"].low <= DONE_MS <= b.tails["p50"].high


def test_a_failed_step_is_a_failed_task_with_its_reason_and_the_steps_before_it(tmp_path):
    truth = Truth({"fa": RuntimeTruth(task_fails="install")}, seed=1)
    exp = {**EXP, "levels": [], "runs": 1}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, world):
        samples = run(s)
        every = s.store.samples(s.run_id)
        assert world.running == {}
    done = [x for x in every if x.metric == "task.done@seq" and not x.warmup]
    assert len(done) == 2 and all(x.value is None for x in done)
    assert all("its install step failed" in x.error for x in done), done[0].error
    assert len(values(samples, "task.clone@seq")) == 2  # the steps it did finish
    assert len(values(samples, "task.install@seq")) == 0


def test_a_runtime_without_exec_cannot_and_says_so_once(tmp_path):
    truth = Truth({"fa": RuntimeTruth(exec_ms=None)}, seed=1)
    with fake_session(tmp_path, truth, ["fa"], {**EXP, "runs": 2}) as (s, world):
        assert run(s) == []
        every = s.store.samples(s.run_id)
        assert world.running == {}  # none was started
    assert {x.error for x in every} == {"fa cannot: fake: no exec"}
    assert {x.metric for x in every} == {"task.done@seq", "task.done@3"}


def test_the_runners_report_is_parsed_as_written():
    out = (
        "noise\n"
        "vb-task step=clone status=0 ms=115.584\n"
        "vb-task step=venv status=0 ms=82.742\n"
        "vb-task step=install status=1 ms=7183.098\n"
        "vb-task done status=failed:install ms=7381.424 fs=ext4 passed=0\n"
    )
    got = task.parse(out)
    assert got is not None and not got.ok and got.fs == "ext4" and got.passed == 0
    assert [(x.name, x.status, x.ms) for x in got.steps] == [
        ("clone", 0, 115.584),
        ("venv", 0, 82.742),
        ("install", 1, 7183.098),
    ]
    assert task.parse("vb-task step=clone status=0 ms=1.0\n") is None  # no verdict: none


def test_the_command_names_paths_inside_the_instance():
    argv = task.command()
    assert argv[0] == task.PYTHON and argv[1] == "/task/vb-task.py"
    assert "--work=/data/task" in argv and f"--git={task.GIT}" in argv
