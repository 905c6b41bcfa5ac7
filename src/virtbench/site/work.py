"""A run's own files, made from its samples: its report (the page `virtbench report`
writes, with the site's links above it), its JSON (site/data.py), its Bencher file and
the answers its testbed's leaderboard shows. Runs are independent of one another, so they
are made by worker processes (`--jobs`), each pinned to one CPU, each with its own
connection to the store (none crosses a fork)."""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from virtbench import metrics
from virtbench.analysis import significance
from virtbench.errors import VirtbenchError
from virtbench.report import bmf, html
from virtbench.report.answers import answers, emulated_runtimes
from virtbench.site import data
from virtbench.site.plan import UNRECORDED, Run
from virtbench.store import Store, open_store


@dataclass(frozen=True)
class Task:
    """What one run's files need: the run, the run it is compared with (None: none, or
    a testbed that cannot tell) and the report's links back into the site."""

    run: str
    previous: str | None
    links: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Made:
    """A run's files' texts (made where the run is, so a worker encodes them)."""

    run: str
    report: str  # HTML
    json: str
    bmf: str
    parts: str  # the answers as the report shows them


def task_of(run: Run, links: list[tuple[str, str]]) -> Task:
    """The task of a planned run: compared with its entry's previous
    completed run where its testbed was recorded."""
    prev = run.previous.id if run.previous and run.testbed != UNRECORDED else None
    return Task(run.id, prev, tuple(links))


def make(store: Store, task: Task) -> Made:
    """One run's files; an error names the run."""
    try:
        return _make_files(store, task)
    except VirtbenchError as exc:
        raise VirtbenchError(f"site: run {task.run}: {exc}") from None
    except Exception as exc:  # a run the site cannot read: named, with what went wrong
        raise VirtbenchError(f"site: run {task.run}: {type(exc).__name__}: {exc}") from exc


def _make_files(store: Store, task: Task) -> Made:
    run = store.run(task.run)
    f = store.frame(task.run)
    found = answers(f)
    previous = None
    if task.previous:
        rows, none = data.verdicts(store.frame(task.previous), f)
        previous = {"run": task.previous, "verdicts": rows, "none": none}
    sums = data.summaries(f)
    doc = data.run_json(run, f, found, sums, previous)
    parts = [html.answer_view(a) for a in found]
    opts = html.Options(
        plots_dir=None, links=list(task.links), answers={task.run: parts}, light_plots=True
    )
    report = html.render(store, [task.run], opts)
    parts = [{**p, "table": vars(p["table"])} for p in parts]
    named = bmf.of_run([(k, s) for k, s, _, _ in sums], emulated_runtimes(f))
    return Made(
        task.run, report, data.dumps(doc), data.dumps(named), data.dumps({"answers": parts})
    )


_store: Store | None = None  # a worker's own connection
CHUNK = 16  # runs handed to a worker at once


def _start(location: str | Path, alive: Any, cpus: Any) -> None:
    global _store
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    cpu = cpus.get()
    os.sched_setaffinity(0, {cpu})  # one CPU each: the report draws its figures in turn
    _store = open_store(location, alive=alive)  # a dead run reads crashed, as here


def _make(task: Task) -> Made:
    assert _store is not None
    return make(_store, task)


def made(store: Store, location: str | Path, tasks: list[Task], jobs: int) -> Iterator[Made]:
    """Each task's files as they are made: here with one job, else by `jobs` worker
    processes (each run's frame is made here first: a worker only reads)."""
    if jobs <= 1 or len(tasks) <= 1:
        yield from (make(store, t) for t in tasks)
        return
    store.make_frames(sorted({r for t in tasks for r in (t.run, t.previous) if r}))
    # what each worker would make for itself, made once before they fork
    metrics.registry()
    html.preload()
    significance.preload()
    ctx = multiprocessing.get_context("fork")
    cpus = ctx.SimpleQueue()
    mine = sorted(os.sched_getaffinity(0))
    for i in range(jobs):
        cpus.put(mine[i % len(mine)])
    start = (location, store.alive, cpus)
    pool = ProcessPoolExecutor(jobs, ctx, initializer=_start, initargs=start)
    try:
        # runs in a row of one entry to one worker: each is compared with the one before,
        # whose frame and resamples that worker then still holds (a few at a time: a
        # Ctrl-C waits for the runs begun)
        chunk = min(CHUNK, max(1, len(tasks) // (jobs * 4)))
        yield from pool.map(_make, tasks, chunksize=chunk)
    finally:  # on an error or Ctrl-C, the runs not started are not started
        pool.shutdown(wait=True, cancel_futures=True)
