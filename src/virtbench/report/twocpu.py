"""Work shared between this process and one forked child, for the reading commands on a
host with more than one CPU: the child takes tasks from the front of the list, this
process from the back, each until they meet; the results come back in task order.

The child sees this process's data as it was at the fork and must not touch what this
process holds open (the store's connection): tasks compute from values (a frame, samples)
and return plain results (strings, lists), which cross a pipe pickled. A VirtbenchError
raised in the child is raised again here; anything else is named as an internal error.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from virtbench.errors import VirtbenchError

T = TypeVar("T")


def cpus() -> int:
    return len(os.sched_getaffinity(0))


def in_order(tasks: Sequence[Callable[[], T]]) -> Iterator[T]:
    """Each task's result, in task order. The child starts now; this process does its share
    when the first result is asked for, keeping its own results until their turn (the
    child's wait in a queue). With one CPU or one task, each is done as it is asked for."""
    if cpus() < 2 or len(tasks) < 2:
        return (task() for task in tasks)
    ctx = multiprocessing.get_context("fork")
    ends = ctx.Array("i", [0, len(tasks)])  # [the child's next, one past this process's next]
    results: Any = ctx.Queue()

    def take(front: bool) -> int | None:
        with ends.get_lock():
            if ends[0] >= ends[1]:
                return None
            if front:
                ends[0] += 1
                return ends[0] - 1
            ends[1] -= 1
            return ends[1]

    def child() -> None:
        try:
            while (i := take(front=True)) is not None:
                results.put(("ok", i, tasks[i]()))
        except VirtbenchError as exc:
            results.put(("error", -1, str(exc)))
        except BaseException as exc:  # said in the parent, as any internal error is
            results.put(("crash", -1, f"{type(exc).__name__}: {exc}"))
        results.close()
        results.join_thread()  # everything put is in the pipe before the child ends

    proc = ctx.Process(target=child, name="virtbench-helper", daemon=True)
    proc.start()

    def collect() -> Iterator[T]:
        try:
            mine = {}
            while (i := take(front=False)) is not None:
                mine[i] = tasks[i]()
            for i in range(len(tasks)):
                if i in mine:
                    yield mine.pop(i)
                    continue
                kind, j, value = _next(results, proc)
                if kind == "error":
                    raise VirtbenchError(value)
                if kind == "crash":
                    raise RuntimeError(f"in a helper process: {value}")
                assert j == i, (j, i)  # the child takes and puts in order
                yield value
        finally:
            if proc.is_alive():
                proc.kill()  # done, or this process failed: the child's work is not wanted
            proc.join()

    return collect()


def _next(results: Any, proc: Any) -> tuple[str, int, Any]:
    """The child's next result; an error naming its exit status when it ended without
    one."""
    import queue

    while True:
        try:
            return results.get(timeout=1.0)
        except queue.Empty:
            if not proc.is_alive():
                try:  # what it put just before it ended
                    return results.get(timeout=1.0)
                except queue.Empty:
                    raise VirtbenchError(
                        f"a helper process ended (exit {proc.exitcode}) before handing "
                        "back its work"
                    ) from None
