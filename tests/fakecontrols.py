"""The fake runtime's operations on a running instance, after its truth: exec, pause
and snapshot (runtimes/controls.py), for tests only (tests/fakeruntime.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.faketruth import FAKE_PID, RuntimeTruth, classify, lognormal

from virtbench import runtimes
from virtbench.errors import InstanceError
from virtbench.experiments.snapshot_touch import ASK
from virtbench.measure import pagecache
from virtbench.runtimes.base import Instance
from virtbench.runtimes.controls import ExecResult
from virtbench.workloads import task

if TYPE_CHECKING:  # the runtime these are the controls of (its module imports them)
    from tests.fakeruntime import FakeRuntime


# --- exec, pause, snapshot (runtimes/controls.py), after the truth ----------------------
class FakeExec(runtimes.controls.Exec):
    rt: FakeRuntime

    def problem(self) -> str | None:
        return None if self.rt.truth.exec_ms is not None else "fake: no exec"

    def run(self, inst: Instance, argv: list[str], timeout: float) -> ExecResult:
        truth = self.rt.truth
        held = self.rt.world.running.get(inst.name)
        if held is not None and held.pid - FAKE_PID in truth.mute:
            raise InstanceError(f"{inst.name}: no answer in {timeout:g} s")
        # a command runs once the instance is ready: at its drawn ready time at the soonest
        t0 = max(time.monotonic_ns(), inst.own.done_ns)
        if argv[1:2] == task.command()[1:2]:
            return _task(t0, truth.exec_ms, truth)
        if argv == ASK:  # vb-touch: the next beat carries the touch of what it dirtied
            ms = truth.touch_per_mib_ms * dirtied(inst)
            ms += truth.cold_touch_per_mib_ms * dirtied(inst) * inst.own.cold
            end = t0 + round(truth.exec_ms * 1e6)
            self.rt._beat(inst, end + 2_000_000, touched_ns=max(1, round(ms * 1e6)))
            return ExecResult(t0, end, 0, len("vb-touch: 1 signalled\n"))
        nbytes = int(argv[1]) if len(argv) > 1 else len("hello from virtbench\n")
        ms = truth.exec_ms + truth.exec_per_mib_ms * nbytes / 2**20
        ms += truth.exec_per_instance_ms * self.rt.world.background(self.rt.label)
        with self.rt._lock:
            if truth.exec_fail_share and self.rt.world.rng.random() < truth.exec_fail_share:
                return ExecResult(t0, t0 + round(ms * 1e6), 1, 0, "fake: injected failure")
        return ExecResult(t0, t0 + round(ms * 1e6), 0, nbytes - truth.exec_lost_bytes)


def _task(t0: int, exec_ms: float, truth: RuntimeTruth) -> ExecResult:
    """The task's run (workloads/task.py) after the truth: its report, its steps' times,
    its exec's time their sum and `exec_ms`."""
    lines, total = [], 0.0
    for name, ms in zip(("clone", "venv", "install", "test"), truth.task_steps_ms, strict=True):
        failed = name == truth.task_fails
        lines.append(f"vb-task step={name} status={int(failed)} ms={ms:.3f}")
        total += ms
        if failed:
            break
    status = f"failed:{truth.task_fails}" if truth.task_fails else "0"
    lines.append(f"vb-task done status={status} ms={total:.3f} fs=fakefs passed=482")
    out = "".join(line + "\n" for line in lines)
    end = t0 + round((total + exec_ms) * 1e6)
    return ExecResult(t0, end, int(bool(truth.task_fails)), len(out), "", out)


class FakePause(runtimes.controls.Pause):
    rt: FakeRuntime

    def problem(self) -> str | None:
        return None if self.rt.truth.pause_ms is not None else "fake: no pause"

    def _pause(self, inst: Instance) -> None:
        time.sleep(self.rt.truth.pause_ms / 1e3)
        if self.rt.truth.beats_while_paused:  # it goes on beating every 2 ms until resumed
            inst.own.thawed = thawed = threading.Event()
            threading.Thread(target=self._beat_until, args=(inst, thawed), daemon=True).start()

    def _beat_until(self, inst: Instance, thawed: threading.Event) -> None:
        while not thawed.wait(0.002):
            self.rt._beat(inst, time.monotonic_ns())

    def _resume(self, inst: Instance) -> None:
        thawed, inst.own.thawed = inst.own.thawed, None
        if thawed is not None:
            thawed.set()
        t0 = time.monotonic_ns()
        time.sleep(self.rt.truth.resume_ms / 1e3)
        self.rt._beat(inst, t0 + round(self.rt.truth.resume_ready_ms * 1e6))


def dirtied(inst: Instance) -> int:
    """The MiB a beat instance wrote before ready (`vb-ready ... --beat MS MIB`)."""
    return int(inst.spec.argv[5]) if len(inst.spec.argv) > 5 else 0


class FakeSnapshot(runtimes.controls.Snapshot):
    rt: FakeRuntime

    def problem(self) -> str | None:
        return None if self.rt.truth.checkpoint_ms is not None else "fake: no checkpoint"

    def checkpoint(self, inst: Instance, image_dir: Path) -> None:
        truth, mib = self.rt.truth, dirtied(inst)
        time.sleep((truth.checkpoint_ms + truth.checkpoint_per_mib_ms * mib) / 1e3)
        with (image_dir / "state").open("wb") as f:  # sparse: du counts what is written
            f.write(b"\1" * round(truth.image_mib * 2**20))
            f.write(b"\2" * (mib << 20))

    def restore(self, inst: Instance, image_dir: Path) -> None:
        assert (image_dir / "state").is_file()
        truth = self.rt.truth
        t0 = time.monotonic_ns()
        time.sleep(truth.restore_ms / 1e3)
        token = "0" * 16 if truth.restores_a_stranger else None
        with self.rt._lock:
            ready_ms = lognormal(self.rt.world.rng, truth.restore_ready_ms, truth.restore_cv)
        ready_ms += truth.restore_per_mib_ms * dirtied(inst)
        inst.own.cold = pagecache.resident_bytes([image_dir / "state"]) == 0
        if inst.own.cold:
            ready_ms += truth.cold_ms  # its image read from the disk
        self.rt._beat(inst, t0 + round(ready_ms * 1e6), token)

    copies = True

    def restore_copy(self, copy: Instance, image_dir: Path, source: Instance) -> None:
        assert (image_dir / "state").is_file()
        truth, kind = self.rt.truth, classify(copy.argv)
        with self.rt._lock:
            self.rt.world.add(copy.name, self.rt.label, *kind, copy.spec.cpus)
            source.own.copies += 1
            k = source.own.copies
        t0 = time.monotonic_ns()
        time.sleep(truth.restore_ms / 1e3)
        if k <= truth.copies_lost:
            return  # it runs, and never beats
        copy.own.token, copy.own.seq = source.own.token, source.own.seq
        ready_ms = truth.restore_ready_ms + (k - 1) * truth.copy_stagger_ms
        ready_ms += truth.restore_per_mib_ms * dirtied(copy)
        self.rt._beat(copy, t0 + round(ready_ms * 1e6))
