"""twocpu.in_order: tasks done on two CPUs, results in task order, failures said."""

from __future__ import annotations

import os
import time

import pytest

from virtbench.errors import VirtbenchError
from virtbench.report import twocpu


def slow(i: int):
    def task() -> tuple[int, int]:
        time.sleep(0.2)
        return i, os.getpid()

    return task


def test_tasks_are_shared_between_two_processes_and_come_back_in_order():
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: in_order does the tasks in this process")
    got = list(twocpu.in_order([slow(i) for i in range(6)]))
    assert [i for i, _ in got] == list(range(6))
    pids = {pid for _, pid in got}
    assert os.getpid() in pids and len(pids) == 2, pids  # this process and its child


def test_with_one_cpu_the_tasks_are_done_here(monkeypatch):
    monkeypatch.setattr(twocpu, "cpus", lambda: 1)
    got = list(twocpu.in_order([slow(i) for i in range(3)]))
    assert got == [(0, os.getpid()), (1, os.getpid()), (2, os.getpid())]


def test_a_failure_in_either_process_is_raised_here():
    def bad() -> int:
        raise VirtbenchError("--plots /x: cannot write (Permission denied)")

    tasks = [bad, *[lambda: 1] * 3]  # whichever process takes it
    with pytest.raises(VirtbenchError, match="cannot write"):
        list(twocpu.in_order(tasks))
    tasks = [lambda: time.sleep(0.3) or 1, bad]  # the child sleeps: this process takes `bad`
    with pytest.raises(VirtbenchError, match="cannot write"):
        list(twocpu.in_order(tasks))


def test_an_unexpected_error_in_the_child_is_named():
    with pytest.raises(RuntimeError, match="in a helper process: ZeroDivisionError"):
        # this process sleeps in the last task while the child takes the first
        list(twocpu.in_order([lambda: 1 / 0, lambda: time.sleep(0.5) or 2]))
