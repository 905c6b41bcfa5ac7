"""`density`'s liveness probes: with `liveness_probes` = K, K instances of a pile-up,
drawn at random (seeded by the run), each run vb-hello through the runtime's exec; each
answer (or why not) is a `density.liveness` sample, and how many answered
`density.answered`."""

from __future__ import annotations

from typing import Any

import numpy as np

from virtbench.errors import InstanceError
from virtbench.experiments.command import HELLO, HELLO_BYTES, wrong
from virtbench.figure import MONO, NS_MS, pile_metric
from virtbench.runtimes.model import Family

LIVENESS = pile_metric(
    "density.liveness",
    "ms",
    "lower",
    "liveness_probes: the exec call in a probed instance of the pile-up -> vb-hello's line "
    "read and its exit seen" + MONO,
    resolution=NS_MS,
    label="liveness probe",
)
ANSWERED = pile_metric(
    "density.answered",
    "instances",
    "higher",
    "liveness_probes: the probed instances that answered",
    resolution=1.0,
    repeated=False,
    compared=False,
    side=True,
    label="instances that answered",
)
LIVENESS_METRICS = (LIVENESS, ANSWERED)


def with_agent(rt: Any, probes: int) -> bool:
    """Whether a pile-up's instances start with their exec agent: where they will be
    probed and a VM boots Linux for them anyway (`guest = "linux"`); never where the agent
    would make a VM boot Linux instead of the minimal guest the figures are of."""
    return bool(probes) and rt.family is Family.VM and getattr(rt.options, "guest", "") == "linux"


def alive(pile: Any) -> None:
    """Ask `liveness_probes` random instances of the pile-up (density_pile.Pile) to run a
    command; record each answer (or why not) and how many answered."""
    rt, n = pile.rt, len(pile.started)
    why = rt.exec.problem_in(pile.started[0])
    if why is not None:
        pile.sample(ANSWERED, None, n, error=f"{pile.runtime} cannot answer a command: {why}")
        return
    rng = np.random.default_rng([pile.s.order_seed, pile.rep])
    chosen = sorted(rng.choice(n, size=min(pile.cfg.liveness_probes, n), replace=False))
    answered, first = 0, ""
    for i in chosen:
        params = {**pile.params, "probed": len(chosen), "instance_index": int(i)}
        value, err = ask(pile, int(i))
        pile.sample(LIVENESS, value, n, params=params, error=err)
        answered += not err
        first = first or (err and f"instance {i + 1}: {err}")
    pile.sample(ANSWERED, float(answered), n, params={**pile.params, "probed": len(chosen)})
    if answered < len(chosen):
        missing = len(chosen) - answered
        pile.s.event(
            "warning",
            f"density: {pile.runtime}: {missing} of {len(chosen)} probed "
            f"instances did not answer ({first})",
        )


def ask(pile: Any, i: int) -> tuple[float | None, str]:
    """The pile-up's `i`th instance asked to run vb-hello through its runtime's exec:
    (the exec call -> its line read, in ms, or None; why it did not answer, or "")."""
    try:
        res = pile.rt.exec.run(pile.started[i], HELLO, pile.cfg.timeout_s)
        err = wrong(res, HELLO_BYTES)
    except InstanceError as exc:
        return None, str(exc)
    return (None, err) if err else (res.ms, "")
