"""Daemons a run starts: how one that died is told apart and started again (real processes;
a shell stands in for dockerd)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from virtbench.errors import RuntimeUnavailable
from virtbench.host.state import RunState
from virtbench.runtimes.daemon import Daemon, Daemons, start_time


@pytest.fixture
def daemons(tmp_path: Path):
    state = RunState(tmp_path / "run").open()
    d = Daemons(state)
    yield d
    d.close()
    state.close()


def _shell_daemon(d: Daemons, tmp_path: Path, script: str) -> int:
    flag = tmp_path / "up"
    flag.unlink(missing_ok=True)
    argv = ["sh", "-c", f"echo starting; touch {flag}; {script}"]
    assert d.ensure(Daemon("fake", flag.exists, argv, ready_timeout=10, stop_timeout=5))
    return d.started["fake"].popen.pid


def _wait_exit(d: Daemons) -> None:
    deadline = time.monotonic() + 10
    while d.started["fake"].popen.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_running_daemon_is_not_gone_and_one_not_started_is_not_ours(daemons, tmp_path):
    _shell_daemon(daemons, tmp_path, "sleep 30")
    assert daemons.gone("fake") is None
    assert daemons.gone("dockerd") is None  # not started by this run: nothing to say


def test_a_daemon_killed_mid_run_is_named_with_its_pid_and_signal(daemons, tmp_path):
    pid = _shell_daemon(daemons, tmp_path, "sleep 30")
    os.kill(pid, signal.SIGKILL)
    _wait_exit(daemons)
    why = daemons.gone("fake")
    assert why == f"fake (pid {pid}), started by this run, killed by SIGKILL mid-run"


def test_a_daemon_that_exited_with_an_error_says_its_last_log_line(daemons, tmp_path):
    pid = _shell_daemon(daemons, tmp_path, "echo 'failed to start containerd' >&2; exit 3")
    _wait_exit(daemons)
    assert daemons.gone("fake") == (
        f"fake (pid {pid}), started by this run, exited with status 3 mid-run: "
        "failed to start containerd"
    )


def test_restart_starts_the_same_daemon_again_and_close_stops_it(daemons, tmp_path):
    first = _shell_daemon(daemons, tmp_path, "sleep 30")
    os.kill(first, signal.SIGKILL)
    _wait_exit(daemons)
    (tmp_path / "up").unlink()
    daemons.restart("fake")
    second = daemons.started["fake"].popen.pid
    assert second != first and daemons.gone("fake") is None
    assert (tmp_path / "up").exists()  # it ran its start-up again, and was waited for
    started = start_time(second)
    daemons.close()
    assert start_time(second) != started


def test_a_daemon_that_cannot_start_is_one_line_with_its_log(daemons, tmp_path):
    argv = [
        "sh",
        "-c",
        "echo 'level=fatal msg=\"pid file found, ensure docker is not running\"' >&2; exit 1",
    ]
    with pytest.raises(RuntimeUnavailable) as err:
        daemons.ensure(Daemon("fake", lambda: False, argv, ready_timeout=10))
    assert str(err.value) == (
        'fake exited: level=fatal msg="pid file found, ensure docker is not running"'
    )
    assert "fake" not in daemons.started  # nothing of it is left to stop


def test_a_daemon_that_never_answers_is_stopped_and_says_so(daemons, tmp_path):
    with pytest.raises(RuntimeUnavailable, match=r"^fake no answer in 0.5 s: waiting$"):
        daemons.ensure(
            Daemon(
                "fake",
                lambda: False,
                ["sh", "-c", "echo waiting; sleep 30"],
                ready_timeout=0.5,
                stop_timeout=2,
            )
        )
    assert "fake" not in daemons.started
