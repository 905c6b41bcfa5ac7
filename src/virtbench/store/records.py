"""What a run stores: a `Sample` per measured value and a `RunRecord` per run.

Plain records with no behaviour, shared by the experiments that make them, the store that
keeps them and the reports that read them (`virtbench.store` re-exports them).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

Direction = Literal["lower", "higher"]


@dataclass(frozen=True)
class Sample:
    """One measured value; maps 1:1 to a row of `samples`.

    metric      what was measured, e.g. "boot.spawn_to_exit"
    value       the number (None when the measurement failed: see `error`)
    unit        "ms", "MiB", ...
    direction   "lower" or "higher": which way is better
    runtime     runtime name as in the spec ("crun", "docker:runsc")
    workload    workload name ("hello", "sleep")
    repetition  0-based repetition index within the run
    background  instances already running when this was measured
    attacker    isolation attacker ("" when none)
    placement   attacker placement ("" when none)
    warmup      true for warm-up measurements (kept, never summarised)
    emulated    true when measured under emulation (functional only)
    error       why the measurement failed ("" when it did not)
    params      everything else that identifies the condition (network, limits, ...)
    host        the host it was measured on, in a fleet ("" for this machine)
    t           Unix time it was measured
    """

    experiment: str
    metric: str
    value: float | None
    unit: str
    direction: Direction
    runtime: str
    workload: str
    repetition: int
    background: int = 0
    attacker: str = ""
    placement: str = ""
    warmup: bool = False
    emulated: bool = False
    error: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    host: str = ""
    t: float = field(default_factory=time.time)


def value_of(s: Sample) -> float:
    """The value of a successful sample (one that has one: plotkit's `successful`)."""
    assert s.value is not None, f"{s.metric}: a sample without a value"
    return s.value


def values_of(samples: Iterable[Sample]) -> list[float]:
    """The samples' values, nan for one without: as numpy reads a None, a value that is
    not finite (never summarised)."""
    return [math.nan if s.value is None else s.value for s in samples]


@dataclass(frozen=True)
class RunRecord:
    """One run; maps 1:1 to a row of `runs`.

    id          six-character run id
    name        the spec's name
    created     Unix time it started; finished: when it ended (None while running)
    status      running, completed, failed, interrupted, crashed
    argv        the command line that started it
    spec        the validated spec it ran
    environment the host snapshot (kernel, CPU, runtimes' versions, ...)
    artifacts   the artifacts it used, with digests and sizes
    host        the host it ran on, in a fleet ("" for this machine)
    fleet       the id of the fleet run it belongs to ("" when none)
    """

    id: str
    name: str
    created: float
    finished: float | None
    status: str
    argv: list[str]
    spec: dict[str, Any]
    environment: dict[str, Any]
    artifacts: list[dict[str, Any]]
    host: str = ""
    fleet: str = ""
