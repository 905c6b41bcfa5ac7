"""Instances launched together: at once (a burst) or at a fixed gap (a staggered wave),
each waited for until ready and then, if asked, given a first command, in a thread of
its own (`burst`, `tti`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from virtbench.errors import InstanceError
from virtbench.runtimes.base import Instance, Runtime

MAX_AT_ONCE = 2000


def levels(v: list[int]) -> list[int]:
    """A spec's `levels` (instances launched at once), checked and sorted: each in
    1..MAX_AT_ONCE, none twice (ValueError says which)."""
    for i, n in enumerate(v):
        if not 1 <= n <= MAX_AT_ONCE:
            raise ValueError(f"[{i}]: {n} instances at once is outside 1..{MAX_AT_ONCE}")
    if len(set(v)) != len(v):
        raise ValueError("a level is given twice")
    return sorted(v)


@dataclass
class Launched:
    """One instance of a burst: its launch call's ns, the call returned (None: it
    failed), its ready datagram's ns (None: never), why not, and what `then` gave."""

    spawn_ns: int
    returned_ns: int | None = None
    ready_ns: int | None = None
    why: str = ""
    then: Any = None


def launch_together(
    rt: Runtime,
    insts: list[Instance],
    timeout: float,
    then: Callable[[Instance], Any] | None = None,
    gap_s: float = 0.0,
) -> list[Launched]:
    """Launch every instance at once (with `gap_s`: the k-th k x gap_s after the first);
    per instance what became of it (`Launched`). `then(inst)`, called in the instance's
    own thread once it is ready (a command run in it, say), gives `.then`; its
    InstanceError, `.why`. A driver whose launch is a launcher command
    (`spawns_launcher`) has them all issued back to back by this thread, as `xargs -P`
    would, then each waited for in a thread of its own; any other's launch calls (and
    every staggered one) are made by one thread each, released together by a barrier.
    Interrupted (Ctrl-C), it returns once the launch calls under way have: threads still
    at the barrier or before their turn launch nothing, and the waits for ready end at
    once, so the caller stops every instance without waiting out `timeout` for one that
    hangs."""
    if not insts:
        return []
    return _Together(rt, insts, timeout, then, gap_s).run()


class _Together:
    """One launch_together: its instances, their launches and waits."""

    def __init__(
        self,
        rt: Runtime,
        insts: list[Instance],
        timeout: float,
        then: Callable[[Instance], Any] | None,
        gap_s: float,
    ) -> None:
        self.rt, self.insts, self.timeout, self.then = rt, insts, timeout, then
        self.issued: dict[str, str] = {}  # instance -> why its launch call failed
        self.abort = threading.Event()
        self.start: list[float] = []  # when the barrier released them
        self.slot = {inst.name: k * gap_s for k, inst in enumerate(insts)}
        self.gate: threading.Barrier | None = None
        if rt.spawns_launcher and not gap_s:
            for inst in insts:
                try:
                    rt.spawn_launch(inst)
                except InstanceError as exc:
                    self.issued[inst.name] = str(exc)
                except Exception as exc:  # said as this instance's failure, never lost
                    self.issued[inst.name] = f"{type(exc).__name__}: {exc}"
        else:
            self.gate = threading.Barrier(
                len(insts), action=lambda: self.start.append(time.monotonic())
            )

    def launch(self, inst: Instance) -> None:
        if self.gate is None:
            self.rt.finish_launch(inst)
            return
        self.gate.wait(timeout=60)
        turn = self.slot[inst.name]
        if turn and self.abort.wait(self.start[0] + turn - time.monotonic()):
            raise threading.BrokenBarrierError  # interrupted before its turn
        self.rt.launch(inst, detach=True)

    def one(self, inst: Instance) -> Launched:
        if inst.name in self.issued:
            return Launched(inst.t_spawn_ns or time.monotonic_ns(), why=self.issued[inst.name])
        got = Launched(0)
        try:
            self.launch(inst)
            got.spawn_ns, got.returned_ns = inst.t_spawn_ns, time.monotonic_ns()
            got.ready_ns = self.rt.wait_ready(inst, self.timeout, self.abort)
            if self.then is not None:
                got.then = self.then(inst)
        except threading.BrokenBarrierError:
            got.why = (
                "interrupted"
                if self.abort.is_set()
                else "the burst's threads did not all start in 60 s"
            )
        except InstanceError as exc:
            got.why = str(exc)
        except Exception as exc:  # said as this instance's failure, never lost
            got.why = f"{type(exc).__name__}: {exc}"
        got.spawn_ns = got.spawn_ns or inst.t_spawn_ns or time.monotonic_ns()
        return got

    def run(self) -> list[Launched]:
        if len(self.insts) == 1:  # (tti's one by one) in this thread: none to start
            return [self.one(self.insts[0])]
        pool = ThreadPoolExecutor(max_workers=len(self.insts), thread_name_prefix="vb-burst")
        try:
            futures = [pool.submit(self.one, inst) for inst in self.insts]
            return [f.result() for f in futures]
        except BaseException:  # Ctrl-C: end the waits, keep the launches whole
            self.abort.set()
            if self.gate is not None:
                self.gate.abort()
            if self.rt.ctx.probe is not None:
                self.rt.ctx.probe.wake()
            raise
        finally:
            pool.shutdown(wait=True)
