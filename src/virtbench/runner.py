"""One `virtbench run`: from a validated spec to samples in the store, and nothing left over.

Order: check every runtime is available (before anything is created), take the run's
lock, build the artifact, snapshot the environment, then run each experiment. The
`finally:` stops every instance, removes the bridge, probe socket and state
directory, and marks the run completed, interrupted (Ctrl-C / SIGTERM) or failed.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from virtbench import cgroups, cleanup, experiments, naming, runtimes
from virtbench.artifacts import Artifact, build_for
from virtbench.errors import RuntimeUnavailable, SpecError
from virtbench.experiments.session import Session
from virtbench.measure.host import HostSampler, snapshot
from virtbench.measure.probe import ProbeListener
from virtbench.paths import Paths
from virtbench.runtimes.base import Runtime, RuntimeContext
from virtbench.spec import Spec
from virtbench.state import RunState
from virtbench.store import Sample, Store


def check_available(spec: Spec) -> dict[str, str]:
    """Versions of the spec's runtimes; raises naming the first that cannot run here."""
    versions = {}
    for label in spec.runtimes:
        cls = runtimes.get(label)
        opts = cls.Options(**spec.options_for(label))
        avail = cls.available(opts)
        if not avail.ok:
            fix = f"; fix: {avail.fix}" if avail.fix else ""
            raise RuntimeUnavailable(f"runtime {label} is not available: {avail.reason}{fix}")
        versions[label] = avail.version
        for exp in spec.experiment:  # e.g. a VM's minimal guest runs only hello and sleep
            for w in exp.instance_workloads():
                why = cls.cannot_run(w, opts)
                if why:
                    raise SpecError(f"runtime {label} cannot run {w} ({exp.type}): {why}")
    return versions


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


def execute(
    spec: Spec,
    store: Store,
    paths: Paths,
    say: Callable[[str], None],
    argv: list[str] | None = None,
    started: Callable[[str], None] | None = None,
) -> tuple[str, str]:
    """Run `spec`; returns (run id, final status). KeyboardInterrupt is re-raised after cleanup."""
    versions = check_available(spec)
    layout = cgroups.Layout.detect()
    leftovers = cleanup.scan(paths, layout=layout)
    if leftovers:
        say(f"[yellow]warning[/]: {cleanup.summarize(leftovers)}; `virtbench clean` removes them")
    run_id = naming.new_run_id()
    state = RunState(paths.run_dir(run_id)).open()
    status = "failed"
    drivers: dict[str, Runtime] = {}
    ctx: RuntimeContext | None = None
    probe: ProbeListener | None = None
    sampler: HostSampler | None = None
    try:
        with sigterm_as_interrupt():
            store.create_run(run_id, spec.name, argv or sys.argv, spec.model_dump(mode="json"))
            if started:
                started(run_id)
            store.set_environment(run_id, snapshot(versions))
            artifact = build_for(spec.experiment, paths.guest_src, paths.cache)
            store.add_artifact(run_id, artifact.to_dict())
            probe = ProbeListener(state.dir / "probe")
            ctx = RuntimeContext(run_id, state, paths, layout, probe=probe, rootfs=artifact.path)
            drivers = {
                label: runtimes.create(label, ctx, spec.options_for(label))
                for label in spec.runtimes
            }
            for label, drv in drivers.items():  # daemons, images: never inside a measurement
                say(f"setting up {label}")
                drv.setup()
            session = Session(run_id, spec, store, artifact, probe, drivers, say=say)
            for exp in spec.experiment:  # a spec that cannot run fails before any sample
                module = experiments.get(exp.type)
                if hasattr(module, "check"):
                    module.check(session, exp)
            for label, drv in drivers.items():
                record_image_size(store, run_id, label, drv, artifact)
            sampler = HostSampler(lambda pts: store.add_series(run_id, pts)).start()
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
            try:
                errors = _teardown(run_id, store, paths, layout, sampler, drivers, ctx, probe)
                for e in errors:
                    store.add_event(run_id, "error", f"cleanup: {e}")
            finally:
                try:
                    store.finish_run(run_id, status)
                finally:
                    state.close()
    return run_id, status


def record_image_size(
    store: Store, run_id: str, label: str, drv: Runtime, artifact: Artifact
) -> None:
    """The artifact as this runtime stores it (rootfs du, engine image size): one sample of
    the `image` experiment per runtime and run."""
    try:
        size = drv.image_size()
    except Exception as exc:  # a figure we cannot read is not a reason to stop the run
        store.add_event(run_id, "warning", f"image size on {label}: {exc}")
        return
    if size is None:
        return
    store.add_sample(
        run_id,
        Sample(
            experiment="image",
            metric="image_size",
            value=size[0] / 2**20,
            unit="MiB",
            direction="lower",
            runtime=label,
            workload=artifact.name,
            repetition=0,
            params={"measured_by": size[1], "artifact": artifact.digest[:16]},
        ),
    )


def _teardown(
    run_id: str,
    store: Store,
    paths: Paths,
    layout: cgroups.Layout,
    sampler: HostSampler | None,
    drivers: dict[str, Runtime],
    ctx: RuntimeContext | None,
    probe: ProbeListener | None,
) -> list[str]:
    """Stop everything of the run; each step runs even if an earlier one failed."""
    errors: list[str] = []

    def attempt(what: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception as exc:
            errors.append(f"{what}: {exc}")

    if sampler:
        attempt("sampler", sampler.stop)
    for name, drv in drivers.items():
        attempt(f"stop {name}", drv.close)
    if ctx is not None:
        attempt("daemons", ctx.daemons.close)
    if ctx is not None and ctx.bridge is not None:
        attempt("bridge", ctx.bridge.close)
    if probe is not None:
        attempt("probe", probe.close)
    if paths.data_dir(run_id).exists():  # the instances' directories went with them
        attempt("data", lambda: shutil.rmtree(paths.data_dir(run_id)))

    def sweep() -> None:  # belt and braces: anything a driver missed
        rest = cleanup.scan(paths, run_id=run_id, layout=layout, include_live=True)
        rest = [r for r in rest if r.kind != "state"]
        if rest:
            errors.extend(cleanup.remove(rest, layout))
            store.add_event(run_id, "warning", f"cleanup removed {cleanup.summarize(rest)}")

    attempt("sweep", sweep)
    return errors
