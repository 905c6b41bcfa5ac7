"""A run's end: what it holds on the host while it measures (`Held`), and its teardown,
which lets go of all of it (instances, daemons, bridge, probe, data directory, then a sweep
for whatever a driver missed), each step even if an earlier one failed. SIGTERM and SIGHUP
end a run like Ctrl-C, through that teardown, and none of them cuts it short.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from virtbench.host import cgroups, sysctl
from virtbench.loadgen import Clients
from virtbench.measure.probe import ProbeListener
from virtbench.measure.quiet import Primer
from virtbench.measure.sampler import HostSampler
from virtbench.run import cleanup
from virtbench.run.harness import Surroundings
from virtbench.runtimes.base import Runtime, RuntimeContext


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP (a closed terminal) end a run like Ctrl-C: through cleanup."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """Cleanup must finish: hold off Ctrl-C and SIGTERM while it runs."""
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in sigs}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


@dataclass
class Held:
    """What a run holds on the host while it measures, for its teardown (None: not made)."""

    drivers: dict[str, Runtime] = field(default_factory=dict)
    ctx: RuntimeContext | None = None
    probe: ProbeListener | None = None
    sampler: HostSampler | None = None
    primer: Primer | None = None
    sysctl: sysctl.HostProfile | None = None
    clients: Clients | None = None  # a load generator's (loadgen/remote.py)
    # what the run made there could not be removed (the load generator lost): the run's
    # state directory stays, so that `virtbench clean` removes it once it is back
    remote_left: bool = False
    # the runtime names whose engines can hold what the run made (None: every one)
    engines: frozenset[str] | None = None


def teardown(run_id: str, where: Surroundings, layout: cgroups.Layout, held: Held) -> list[str]:
    """Stop everything of the run; each step runs even if an earlier one failed."""
    errors: list[str] = []

    def attempt(what: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as exc:
            errors.append(f"{what}: {exc}")

    store, paths, harness = where.store, where.paths, where.harness
    sampler, ctx, probe = held.sampler, held.ctx, held.probe
    if sampler:
        attempt("sampler", sampler.stop)
    for name, drv in held.drivers.items():
        attempt(f"stop {name}", drv.close)
    if (clients := held.clients) is not None:  # its route and directory, then its connection
        left = clients.close()
        held.remote_left = bool(left)
        errors += left
    if ctx is not None:
        attempt("daemons", ctx.daemons.close)
    if ctx is not None and ctx.bridge is not None:
        attempt("bridge", ctx.bridge.close)
    if probe is not None:
        attempt("probe", probe.close)
    if paths.data_dir(run_id).exists():  # the instances' directories went with them
        attempt("data", lambda: shutil.rmtree(paths.data_dir(run_id)))

    def sweep() -> None:  # belt and braces: anything a driver missed
        problems: list[str] = []  # what could not be listed (a lost load generator)
        rest = harness.leftovers(
            paths, layout, run_id=run_id, include_live=True, problems=problems, engines=held.engines
        )
        errors.extend(problems)
        # its state goes with the lock; its sysctl profile is put back by the run itself
        rest = [r for r in rest if r.kind not in ("state", "sysctl")]
        if rest:
            errors.extend(harness.remove(rest, layout))
            store.add_event(run_id, "warning", f"cleanup removed {cleanup.summarize(rest)}")

    attempt("sweep", sweep)
    return errors
