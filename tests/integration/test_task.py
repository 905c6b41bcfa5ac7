"""An agent's task on real runtimes: each instance clones Flask's repository, installs it
and its tests' dependencies from local wheels and runs its 482 tests, one by one and two
at once; every step timed inside, the whole from the create call; nothing left behind.
On runsc and a QEMU TCG guest (minutes each), and each way on native and crun, under
`long`."""

from __future__ import annotations

import pytest
from tests.integration.conftest import cli, labelled, run_id_of

from virtbench.store import Store

STEPS = ("clone", "venv", "install", "test")


def _experiment(sequential: int, levels: str, runtimes: list[str]) -> str:
    names = ", ".join(f'"{r}"' for r in runtimes)
    return (
        f'[[experiment]]\ntype = "task"\nruntimes = [{names}]\nsequential = {sequential}\n'
        f"levels = {levels}\nruns = 1\nwarm_up = false\nsettle_s = 0.2\n"
    )


def _task_run(env, tmp_path, runtimes: list[str], experiments: str) -> tuple[str, list]:
    path = tmp_path / "task.toml"
    names = ", ".join(f'"{r}"' for r in runtimes)
    path.write_text(
        f'name = "t"\nruntimes = [{names}]\n[instance]\nnetwork = "none"\n{experiments}'
    )
    res = cli("run", str(path), env=env, timeout=3600)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [x for x in Store(tmp_path / "results").samples(rid) if x.experiment == "task"]
    assert not [x.error for x in samples if x.error]
    assert labelled(rid) == []
    return rid, samples


def _check(samples, runtime: str, at: str, n: int) -> None:
    """`n` tasks done at `at`: each whole at least its steps, every test passed."""
    done = [x for x in samples if x.runtime == runtime and x.metric == f"task.done@{at}"]
    assert len(done) == n, (runtime, at, done)
    steps = {
        s: [x.value for x in samples if x.runtime == runtime and x.metric == f"task.{s}@{at}"]
        for s in STEPS
    }
    assert all(len(v) == n for v in steps.values()), steps
    inside = sum(sorted(v)[0] for v in steps.values())
    assert all(x.value > inside for x in done)  # the whole holds its steps
    assert all(x.params["tests_passed"] >= 400 for x in done), done[0].params
    assert all(x.params["work_fs"] not in ("", "unknown", "tmpfs") for x in done)


@pytest.mark.slow
def test_a_task_on_native_one_by_one_and_on_crun_two_at_once(env, tmp_path):
    """Native's task alone, crun's two at once (each way of launching, each kind of
    runtime, once: three tasks; the rest of the matrix is under `long`)."""
    runs = _experiment(1, "[]", ["native"]) + _experiment(0, "[2]", ["crun"])
    rid, samples = _task_run(env, tmp_path, ["native", "crun"], runs)
    _check(samples, "native", "seq", 1)
    _check(samples, "crun", "2", 2)
    wall = [x for x in samples if x.runtime == "crun" and x.metric == "task.wall@2"]
    assert len(wall) == 1 and wall[0].value > 0
    shown = cli("show", rid, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "create -> task done, pooled" in shown.stdout
    assert "its steps, inside" in shown.stdout


@pytest.mark.long
def test_a_task_on_runsc_bwrap_a_qemu_tcg_guest_and_both_ways_on_native_and_crun(env, tmp_path):
    runtimes = ["runsc", "bwrap", "qemu:q35:tcg", "native", "crun"]
    runs = _experiment(1, "[]", runtimes[:3]) + _experiment(1, "[2]", runtimes[3:])
    _, samples = _task_run(env, tmp_path, runtimes, runs)
    for rt in runtimes[3:]:  # each one by one and two at once
        _check(samples, rt, "seq", 1)
        _check(samples, rt, "2", 2)
    for rt in ("runsc", "bwrap", "qemu:q35:tcg"):
        _check(samples, rt, "seq", 1)
