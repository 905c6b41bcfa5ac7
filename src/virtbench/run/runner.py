"""One `virtbench run`: from a validated spec to samples in the store, and nothing left over.

Order: check every runtime is available (before anything is created), take the run's
lock, build the artifact, snapshot the environment, then run each experiment. The
`finally:` stops every instance, removes the bridge, probe socket and state
directory, and marks the run completed, interrupted (Ctrl-C / SIGTERM) or failed.

`resume` (`run --resume RUN`) goes on with an interrupted or failed run under its own id
and stored spec: what the run left on the host is removed first, samples of the units it
did not finish are discarded, and every experiment skips the units it finished.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from virtbench import experiments, naming, runtimes
from virtbench.artifacts import Artifact
from virtbench.errors import VirtbenchError
from virtbench.experiments.session import Session
from virtbench.host import cgroups, sysctl
from virtbench.host.state import RunState
from virtbench.measure.probe import ProbeListener
from virtbench.measure.quiet import Primer, Quiet
from virtbench.measure.sampler import HostSampler
from virtbench.paths import Paths
from virtbench.run import cleanup
from virtbench.run import resume as resumes
from virtbench.run.harness import Harness
from virtbench.run.preflight import apply_sysctl, check_available, named_runtimes
from virtbench.runtimes.base import Runtime, RuntimeContext
from virtbench.spec import Spec
from virtbench.store import Store
from virtbench.store.records import RunRecord, Sample


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
    resume: RunRecord | None = None,
    labels: dict[str, str] | None = None,
    harness: Harness | None = None,
) -> tuple[str, str]:
    """Run `spec` (or go on with `resume`, whose spec it is); returns (run id, final
    status). `labels`: the run's `host` and `fleet` (a fleet run on one of its hosts).
    `harness`: the host as the run prepares, reads and cleans it (default: this one).
    KeyboardInterrupt is re-raised after cleanup."""
    harness = harness if harness is not None else Harness()
    spec, versions, skipped = check_available(spec)
    layout = harness.layout()
    if resume is not None and resume.status == "completed":
        raise VirtbenchError(f"run {resume.id} completed: nothing to resume")
    run_id = resume.id if resume is not None else naming.new_run_id()
    run_state = RunState(paths.run_dir(run_id)).open()  # before anything of the run exists
    try:
        if resume is not None:
            resumes.remove_own_leftovers(resume, paths, layout, say, harness)
        problems: list[str] = []
        leftovers = harness.leftovers(paths, layout, problems=problems)
    except BaseException:
        run_state.close(remove=resume is None)
        raise
    if leftovers:
        say(f"[yellow]warning[/]: {cleanup.summarize(leftovers)}; `virtbench clean` removes them")
    for problem in problems:
        say(f"[yellow]warning[/]: {problem}")
    status = "failed"
    drivers: dict[str, Runtime] = {}
    ctx: RuntimeContext | None = None
    probe: ProbeListener | None = None
    sampler: HostSampler | None = None
    primer: Primer | None = None
    host_sysctl: sysctl.HostProfile | None = None
    try:
        with sigterm_as_interrupt():
            if resume is None:
                store.create_run(
                    run_id, spec.name, argv or sys.argv, spec.model_dump(mode="json"),
                    **(labels or {}),
                )  # fmt: skip
            else:
                store.reopen_run(run_id)
            if started:
                started(run_id)
            for line in skipped if resume is None else ():
                say(f"[yellow]skipped[/]: {line}")
                store.add_event(run_id, "warning", f"skipped: {line}", said=True)
            env = harness.host.snapshot(versions)
            if spec.named:  # which driver and files each named runtime stood for
                env["named_runtimes"] = named_runtimes(spec)
            if spec.sysctl:  # before anything starts: instances see the tuned host
                host_sysctl = apply_sysctl(spec, paths, run_state)
                env["sysctl"] = host_sysctl.apply()
            if resume is None:
                store.set_environment(run_id, env)
            else:
                resumes.resume_events(store, resume, env, argv or sys.argv)
            artifact = harness.artifact(spec.experiment, paths)
            if resume is not None:
                resumes.artifact_event(store, resume, artifact.to_dict())
            store.add_artifact(run_id, artifact.to_dict())
            probe = ProbeListener(run_state.dir / "probe")
            ctx = RuntimeContext(
                run_id, run_state, paths, layout, probe=probe, rootfs=artifact.path
            )
            drivers = {
                label: runtimes.create(
                    label, ctx, spec.options_for(label), driver=spec.driver_of(label)
                )
                for label in spec.runtimes
            }
            for label, drv in drivers.items():  # daemons, images: never inside a measurement
                say(f"setting up {label}")
                drv.setup()
            session = Session(
                run_id, spec, store, artifact, probe, drivers, say=say, host=harness.host
            )
            if resume is not None:
                session.resumed, session.done = True, store.units(run_id)
                resumes.note_unfinished(session)
            for i, exp in enumerate(spec.experiment):  # a spec that cannot run fails first
                module = experiments.get(exp.type)
                if hasattr(module, "check") and spec.runtimes_of(exp):
                    with session.only(spec.runtimes_of(exp), i):
                        module.check(session, exp)
            measured = {smp.runtime for smp in store.samples(run_id) if smp.experiment == "image"}
            for label, drv in drivers.items():
                if label not in measured:
                    record_image_size(store, run_id, label, drv, artifact)
            sampler = HostSampler(
                lambda pts: store.add_series(run_id, pts), interval=spec.sample_interval_s
            ).start()
            session.sampler = sampler
            primer = prepare_quiet(session, drivers, ctx)
            if resume is None:  # how quiet the host was, beside the rest of its facts
                env["quiescence"] = {
                    "enabled": spec.quiescence,
                    "window_ms": round(session.quiet.window_s * 1e3, 3),
                    "other_runnable_before": session.quiet.background,
                    "primer": primer is not None,
                }
                store.set_environment(run_id, env)
            for i, exp in enumerate(spec.experiment):
                whole = ("experiment", json.dumps([i, exp.type]))
                if whole in session.done:
                    say(f"[bold]{exp.type}[/]: finished before the interruption")
                    continue
                these = spec.runtimes_of(exp)
                if not these:  # a study's part for runtimes this run does not have
                    if not exp.runtimes:  # none of its runtimes can run it here: said above
                        say(f"[bold]{exp.type}[/]: skipped (no runtime here can run it)")
                        continue
                    why = f"it runs on {', '.join(exp.runtimes)}, which this run does not"
                    say(f"[bold]{exp.type}[/]: skipped ({why})")
                    if resume is None:
                        store.add_event(run_id, "warning", f"skipped: {exp.type}: {why}", said=True)
                    continue
                say(f"[bold]{exp.type}[/] on {', '.join(these)}")
                with session.only(these, i):
                    experiments.get(exp.type).run(session, exp)
                if not any(e == exp.type for e, _ in session.superseded):
                    store.add_unit(run_id, *whole)  # (else a later resume tries it again)
                    session.done.add(whole)
            if session.superseded:  # a resume must measure again what was cut short
                left = sorted(k for _, k in session.superseded)
                store.add_event(run_id, "error", f"resume: {len(left)} units cut short "
                                f"were not measured again ({', '.join(left[:3])}); their "
                                "earlier samples are kept")  # fmt: skip
                status = "failed"
            else:
                status = "completed"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        with uninterruptible():
            if status == "interrupted":
                say("[yellow]interrupted[/]: stopping every instance")
            try:
                if primer is not None:
                    try:
                        primer.close()
                    except Exception as exc:
                        store.add_event(run_id, "error", f"cleanup: quiet sentinel: {exc}")
                errors = _teardown(
                    run_id, store, paths, layout, sampler, drivers, ctx, probe, harness
                )
                if host_sysctl is not None:  # after every instance: the host as it was
                    errors += host_sysctl.restore()
                for e in errors:
                    store.add_event(run_id, "error", f"cleanup: {e}")
            finally:
                try:
                    store.finish_run(run_id, status)
                finally:
                    run_state.close()
                    with contextlib.suppress(OSError):  # the last run out: shared parents
                        cleanup.remove_empty_parents(layout)
    return run_id, status


def prepare_quiet(
    session: Session, drivers: dict[str, Runtime], ctx: RuntimeContext
) -> Primer | None:
    """Timed launches wait for a quiet host (measure/quiet.py): the previous instance's
    lingering supervisors gone, nothing else runnable. Other work found on the host
    before the first launch is said in an event: every sample then counts as under load."""
    spec = session.spec
    session.quiet = Quiet(
        running=session.host.running,
        settled=lambda: all(d.settled() for d in drivers.values()),
        enabled=spec.quiescence,
    )
    if len(spec.runtimes) > 1:
        session.event(
            "info",
            "order: runtimes measured in the rows of a Williams design (each follows each "
            f"other equally often), seed {session.order_seed}",
        )
    if not spec.quiescence:
        session.event("warning", "quiescence off: each launch follows the previous one at once")
        return None
    primer = None
    if ctx.layout.version:
        primer = Primer(
            ctx.layout,
            lambda suffix: naming.name(ctx.run_id, suffix),
            lambda cg: ctx.state.record("cgroup", cg),
        )
        session.quiet.prime = primer.prime
    other = session.quiet.calibrate()
    if other:
        session.event(
            "warning",
            f"host noise: {other} task(s) of other work kept a CPU busy before the run; "
            "samples measured next to them are flagged (load > 0)",
        )
    return primer


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
    harness: Harness,
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
        rest = harness.leftovers(paths, layout, run_id=run_id, include_live=True)
        # its state goes with the lock; its sysctl profile is put back by the run itself
        rest = [r for r in rest if r.kind not in ("state", "sysctl")]
        if rest:
            errors.extend(harness.remove(rest, layout))
            store.add_event(run_id, "warning", f"cleanup removed {cleanup.summarize(rest)}")

    attempt("sweep", sweep)
    return errors
