"""`task`: an agent's step end to end, as a sandbox service's user waits for it: from the
create call to the exit of a real task run in the new instance.

Each instance runs the `task` workload (it idles once ready); once its ready datagram
reaches the host, the task is run in it through the runtime's own way in (as `tti`'s
first command): guest/vb-task.py clones a real Python project's git repository (Flask,
231 files), creates a virtual environment, installs the project and its tests'
dependencies from local wheels, and runs its tests, in the instance's data directory,
each step timed inside. Per repetition and runtime, batches as `tti`'s:

  seq        `sequential` instances, one after another (each stopped before the next)
  N          each of `levels`: N instances launched at once

Per instance (`@seq`, `@N`), from the create call on the host's monotonic clock:

  task.done       -> the task's exit seen, every step of it succeeded (else a failed
                  sample: the step that failed and its output's tail)
  task.ready      -> the instance's ready datagram

and each step's time inside the instance (its own monotonic clock): task.clone,
task.venv, task.install, task.test. Each carries the work directory's file system (as
the instance sees it) and the tests that passed. Per batch of N: task.wall (the first
create call -> the last task done), task.amortized and task.failed, as `tti`'s.

Before a runtime's first batch, one task is run and stored as a warm-up (left out of
every figure): the first pays for reading Python and the wheels into the page cache. A
runtime that cannot run a command in an instance says so once.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import Field, field_validator

from virtbench.errors import InstanceError
from virtbench.experiments.estimate import QUIET_WAIT_S, Costs, Estimate
from virtbench.experiments.failures import Failures
from virtbench.experiments.held import base_of, cannot
from virtbench.experiments.kind import ExperimentType
from virtbench.experiments.session import Session
from virtbench.experiments.together import Launched, levels
from virtbench.experiments.tti import Asked, Batch, batch_figures, together
from virtbench.figure import MONO, NS_MS, Metric
from virtbench.runtimes.base import Instance
from virtbench.runtimes.controls import ExecResult
from virtbench.tables.base import CommonExperiment
from virtbench.workloads import task as work
from virtbench.workloads import task_source

UNIT = ("runtime", "repetition", "workload")
FROM = "the create call issued -> "
INSIDE = ", timed inside the instance (its monotonic clock)"

# The figures it records (virtbench.figure), each at its batch (`@seq`, `@<n>`).
DONE = Metric(
    "task.done",
    "ms",
    "lower",
    FROM + "the task run in the instance (clone, venv, install, test: guest/vb-task.py, "
    "through the runtime's exec) exited with every step done" + MONO,
    resolution=NS_MS,
    label="time to task done",
)
READY = Metric(
    "task.ready",
    "ms",
    "lower",
    FROM + "the instance's ready datagram reached the host" + MONO,
    resolution=NS_MS,
    headline=False,
    label="create to ready (task)",
)


def _step(name: str, includes: str, label: str) -> Metric:
    return Metric(
        name, "ms", "lower", includes + INSIDE, resolution=0.001, headline=False, label=label
    )


CLONE = _step("task.clone", "git clone of the project's bundle", "step: git clone")
VENV = _step("task.venv", "python -m venv --without-pip", "step: create the venv")
INSTALL = _step(
    "task.install",
    "pip install -e the project and its tests' dependencies from local wheels",
    "step: install",
)
TEST = _step("task.test", "the project's tests (python -m pytest)", "step: run the tests")
WALL = Metric(
    "task.wall",
    "ms",
    "lower",
    "a batch launched at once: its first create call -> its last task done" + MONO,
    resolution=NS_MS,
    headline=False,
    label="time for the batch of tasks",
)
AMORTIZED = Metric(
    "task.amortized",
    "ms",
    "lower",
    "task.wall / the batch's tasks done",
    resolution=NS_MS,
    headline=False,
    label="time per task done",
)
FAILED = Metric(
    "task.failed",
    "instances",
    "lower",
    "instances of the batch whose task did not finish (each a failed task.done with its reason)",
    compared=False,
    side=True,
    label="tasks not done",
)
METRICS = (DONE, READY, CLONE, VENV, INSTALL, TEST, WALL, AMORTIZED, FAILED)
# each step the runner reports, and its figure
STEPS = {"clone": CLONE, "venv": VENV, "install": INSTALL, "test": TEST}


class TaskExperiment(CommonExperiment):
    """Create -> a real task's exit, per instance: `sequential` one after another and
    `levels` at once; every batch `runs` times, after one warm-up task per runtime."""

    RUNS_COMMANDS = True
    type: Literal["task"]
    workload: Literal["task"] = "task"
    sequential: int = Field(default=2, ge=0, le=1000)
    levels: list[int] = Field(default=[4])
    runs: int = Field(default=5, ge=1, le=1000)  # five: the fewest whose median has a CI
    timeout_s: float = Field(default=1800.0, gt=0, le=36_000)  # a task under emulation
    ready_timeout_s: float = Field(default=300.0, gt=0, le=3600)  # create -> ready, at most
    settle_s: float = Field(default=1.0, ge=0, le=600)  # after a batch's instances are stopped
    warm_up: bool = True

    _levels = field_validator("levels")(lambda cls, v: levels(v))

    def workloads_needed(self) -> list[str]:
        return [self.workload]

    def instance_workloads(self) -> list[str]:
        return [self.workload]

    def batches(self) -> list[tuple[str, int]]:
        """(its `@` name, its instances) of each batch of a repetition, in order."""
        out = [("seq", self.sequential)] if self.sequential else []
        return out + [(str(n), n) for n in self.levels]


def run(s: Session, cfg: TaskExperiment) -> None:
    failures = Failures(s, "task")
    units = tuple(DONE.at(at) for at, _ in cfg.batches())
    warm = set() if cfg.warm_up else set(s.runtimes)  # the runtimes warmed up
    for rep, warmup, order in s.schedule(0, cfg.runs, "task"):
        for runtime in order:
            unit = {"runtime": runtime, "repetition": rep, "workload": cfg.workload}
            if not s.pending("task", warmup, **unit):
                continue
            base = base_of(s, "task", runtime, cfg.workload, rep)
            base["params"] = {**base["params"], "project": " ".join(task_source.PROJECT)}
            why = s.runtimes[runtime].exec.problem()
            if why is not None:
                cannot(s, why, base, units)
            elif runtime not in warm:  # one task first, its figures a warm-up's
                warm.add(runtime)
                with failures.attempt(runtime):
                    batch(s, runtime, Batch("seq", 1), cfg, {**base, "warmup": True})
            for at, n in cfg.batches() if why is None else ():
                if failures.skip(runtime):
                    break
                with failures.attempt(runtime):
                    batch(s, runtime, Batch(at, n), cfg, base)
                time.sleep(cfg.settle_s)
            s.finished("task", warmup, **unit)
        s.say(f"task: repetition {rep + 1}/{cfg.runs} done")


def batch(s: Session, runtime: str, b: Batch, cfg: TaskExperiment, base: dict) -> None:
    """One batch: `seq` one instance at a time, else all at once; records its samples.
    InstanceError when not one task was done (the runtime's failures count it)."""
    base = {**base, "params": {**base["params"], "batch": b.at, "instances": b.n}}

    def then(inst: Instance) -> tuple[ExecResult, work.Report | None]:
        res = s.runtimes[inst.runtime].exec.run(inst, work.command(), cfg.timeout_s)
        return res, work.parse(res.stdout_tail)

    asked = Asked("task", cfg.workload, cfg.ready_timeout_s, then, data=True)
    launched: list[Launched] = []
    errors: list[str] = []
    for group in [1] * b.n if b.at == "seq" else [b.n]:
        more, why = together(s, runtime, group, asked, base)
        launched += more
        errors += why
    record(s, base, b, launched, errors)


def failure(got: tuple[ExecResult, work.Report | None]) -> str:
    """Why a task that ran was not done ("" when it was)."""
    res, report = got
    if report is None:
        return f"the task printed no report (exit status {res.status}): {res.stderr[-200:]}"
    if not report.ok:
        step = report.status.removeprefix("failed:")
        return f"its {step} step failed: {res.stderr.strip()[-200:]}"
    if res.status != 0:
        return f"the task exited {res.status}: {res.stderr.strip()[-200:]}"
    return ""


def record(s: Session, base: dict, b: Batch, launched: list[Launched], errors: list[str]) -> None:
    """The batch's samples: each instance's, then (N at once) the batch's own."""
    for why in errors:  # instances that could not even be prepared
        s.record(DONE.at(b.at).sample(None, error=why, **base))
    first = min((x.spawn_ns for x in launched), default=0)
    done = [t for x in launched if (t := one(s, base, b.at, x, first)) is not None]
    if b.at != "seq":
        names = (FAILED, WALL, AMORTIZED)
        batch_figures(s, base, Batch(b.at, len(launched) + len(errors)), first, done, names)
    if not done:
        why = next((x.why for x in launched if x.why), errors[0] if errors else "none started")
        raise InstanceError(
            f"{base['runtime']}: no task of a batch of {b.n} ({b.at}) was done: {why}"
        )


def one(s: Session, base: dict, at: str, x: Launched, first: int) -> int | None:
    """One instance's samples; when its task was done, the ns it was."""
    params = {**base["params"], "launch_offset_ms": round((x.spawn_ns - first) / 1e6, 3)}
    why = x.why or (failure(x.then) if x.then is not None else "it never ran its task")
    report = x.then[1] if x.then is not None else None
    if report is not None:
        params |= {"work_fs": report.fs, "tests_passed": report.passed}
    row = {**base, "params": params}
    if x.ready_ns is not None:
        ready = (x.ready_ns - x.spawn_ns) / 1e6
        s.record(READY.at(at).sample(ready, **row))
    for step in report.steps if report is not None else ():
        if step.status == 0 and step.name in STEPS:
            s.record(STEPS[step.name].at(at).sample(step.ms, **row))
    end = None if why else x.then[0].t_end_ns
    value = None if end is None else (end - x.spawn_ns) / 1e6
    s.record(DONE.at(at).sample(value, error=why, **row))
    return end


def estimate(cfg: TaskExperiment, cost: Costs) -> Estimate:
    """Every instance a launch and a task (~12 s here natively, a hundred launches'
    worth where launches are slow), the warm-up one too; a quiet wait and `settle_s` per
    batch."""
    n = cfg.runs * sum(k for _, k in cfg.batches()) + cfg.warm_up
    waits = cfg.runs * (cfg.sequential + len(cfg.levels))
    each = cost.launch(serving=True) + max(12.0, 100 * cost.launch(serving=True))
    t = n * each + waits * (cfg.settle_s + QUIET_WAIT_S)
    what = [f"{cfg.sequential} one by one"] if cfg.sequential else []
    what += [f"{', '.join(map(str, cfg.levels))} at once"] if cfg.levels else []
    first = "a warm-up task, then " if cfg.warm_up else ""
    return Estimate(n, t, f"{first}{cfg.runs} x ({'; '.join(what)}): clone, install, test")


TYPE = ExperimentType(
    "task",
    TaskExperiment,
    run,
    UNIT,
    order=76,
    estimate=estimate,
    metrics=METRICS,
)
