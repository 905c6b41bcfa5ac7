"""Consecutive failures per runtime within one experiment: a runtime that keeps failing
is skipped for the rest of it, and one whose engine died for the rest of the run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from virtbench.errors import EngineGone, InstanceError

if TYPE_CHECKING:
    from virtbench.experiments.session import Session


class Failures:
    """Consecutive failures per runtime; after MAX in a row the runtime is skipped for the
    rest of the experiment, with a warning event saying why. A runtime whose engine died
    (EngineGone: dockerd killed mid-run) is skipped at once, and for the rest of the run."""

    MAX = 3

    def __init__(self, s: Session, experiment: str) -> None:
        self.s = s
        self.experiment = experiment
        self.count = dict.fromkeys(s.spec.runtimes, 0)

    def skip(self, runtime: str) -> bool:
        dead = self.s.runtimes[runtime].dead
        if dead is not None and self.count[runtime] < self.MAX:
            self.failed(runtime, EngineGone(f"{runtime}: {dead}"))
        return self.count[runtime] >= self.MAX

    def ok(self, runtime: str) -> None:
        self.count[runtime] = 0

    @contextlib.contextmanager
    def attempt(self, runtime: str, what: str = "") -> Iterator[None]:
        """One measurement of `runtime`: its InstanceError is counted (and, naming `what`,
        a warning event), not raised; success resets the count."""
        try:
            yield
        except InstanceError as exc:
            if what:
                self.s.event("warning", f"{self.experiment}: {runtime} {what}: {exc}")
            self.failed(runtime, exc)
        else:
            self.ok(runtime)

    def failed(self, runtime: str, exc: Exception) -> None:
        if isinstance(exc, EngineGone):
            if self.count[runtime] < self.MAX:
                self.count[runtime] = self.MAX
                msg = f"{self.experiment}: {runtime} skipped for the rest of the run: {exc}"
                self.s.event("warning", msg)
            return
        self.count[runtime] += 1
        if self.count[runtime] == self.MAX:
            msg = f"{self.MAX} failures in a row: {exc}"
            self.s.event("warning", f"{self.experiment}: {runtime} skipped after {msg}")
