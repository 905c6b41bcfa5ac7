"""One `virtbench run`: from a validated spec to samples in the store, and nothing left over.

Order: check every runtime is available (before anything is created), take the run's
lock, build the artifact, snapshot the environment, then run each experiment. The
`finally:` stops every instance, removes the bridge, probe socket and state
directory, and marks the run completed, interrupted (Ctrl-C / SIGTERM) or failed.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from virtbench import cgroups, cleanup, experiments, naming, runtimes
from virtbench.artifacts import build_minimal_rootfs
from virtbench.errors import RuntimeUnavailable
from virtbench.experiments.session import Session
from virtbench.measure.host import HostSampler, snapshot
from virtbench.measure.probe import ProbeListener
from virtbench.paths import Paths
from virtbench.runtimes.base import Runtime, RuntimeContext
from virtbench.spec import Spec
from virtbench.state import RunState
from virtbench.store import Store


def check_available(names: list[str]) -> dict[str, str]:
    """Versions of the named runtimes; raises naming the first that cannot run here."""
    versions = {}
    for name in names:
        avail = runtimes.get(name).available()
        if not avail.ok:
            fix = f"; fix: {avail.fix}" if avail.fix else ""
            raise RuntimeUnavailable(f"runtime {name} is not available: {avail.reason}{fix}")
        versions[name] = avail.version
    return versions


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM ends a run like Ctrl-C does: through the same cleanup."""

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


@contextlib.contextmanager
def uninterruptible() -> Iterator[None]:
    """Cleanup must finish: hold off Ctrl-C and SIGTERM while it runs."""
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)


def execute(
    spec: Spec,
    store: Store,
    paths: Paths,
    say: Callable[[str], None],
    argv: list[str] | None = None,
    started: Callable[[str], None] | None = None,
) -> tuple[str, str]:
    """Run `spec`; returns (run id, final status). KeyboardInterrupt is re-raised after cleanup."""
    versions = check_available(spec.runtimes)
    layout = cgroups.Layout.detect()
    leftovers = cleanup.scan(paths, layout=layout)
    if leftovers:
        say(f"[yellow]warning[/]: {cleanup.summarize(leftovers)}; `virtbench clean` removes them")
    run_id = naming.new_run_id()
    state = RunState(paths.run_dir(run_id)).open()
    store.create_run(run_id, spec.name, argv or sys.argv, spec.model_dump(mode="json"))
    if started:
        started(run_id)
    status = "failed"
    drivers: dict[str, Runtime] = {}
    ctx: RuntimeContext | None = None
    probe: ProbeListener | None = None
    sampler: HostSampler | None = None
    try:
        with sigterm_as_interrupt():
            store.set_environment(run_id, snapshot(versions))
            artifact = build_minimal_rootfs(paths.guest_src, paths.cache)
            store.add_artifact(run_id, artifact.to_dict())
            probe = ProbeListener(state.dir / "probe")
            ctx = RuntimeContext(run_id, state, paths, layout, probe=probe)
            drivers = {name: runtimes.get(name)(ctx) for name in spec.runtimes}
            sampler = HostSampler(lambda pts: store.add_series(run_id, pts)).start()
            session = Session(run_id, spec, store, artifact, probe, drivers, say=say)
            for exp in spec.experiment:
                say(f"[bold]{exp.type}[/] on {', '.join(spec.runtimes)}")
                experiments.get(exp.type).run(session, exp)
            status = "completed"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        with uninterruptible():
            if status == "interrupted":
                say("[yellow]interrupted[/]: stopping every instance")
            if sampler:
                sampler.stop()
            errors = []
            for drv in drivers.values():
                try:
                    drv.stop_all()
                except Exception as exc:
                    errors.append(str(exc))
            if ctx is not None and ctx.bridge is not None:
                ctx.bridge.close()
            if probe is not None:
                probe.close()
            rest = cleanup.scan(paths, run_id=run_id, layout=layout, include_live=True)
            rest = [r for r in rest if r.kind != "state"]
            if rest:  # belt and braces: anything a driver missed
                errors += cleanup.remove(rest, layout)
                store.add_event(run_id, "warning", f"cleanup removed {cleanup.summarize(rest)}")
            for e in errors:
                store.add_event(run_id, "error", f"cleanup: {e}")
            store.finish_run(run_id, status)
            state.close()
    return run_id, status
