"""One `virtbench run`: from a resolved spec to samples in the store, and nothing left over.

Order: check every runtime is available (before anything is created), take the run's
lock, build the artifact, snapshot the environment, then run each experiment. The
`finally:` stops every instance, removes the bridge, probe socket and state
directory, and marks the run completed, interrupted (Ctrl-C / SIGTERM) or failed.

`resume` (`run --resume RUN`) goes on with an interrupted or failed run under its own id
and stored spec (run/resume.py): what the run left on the host is removed first, units it
cut short are measured again, and every experiment skips the units it finished.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass

from rich.markup import escape

from virtbench import experiments, metrics, naming
from virtbench.artifacts import Artifact
from virtbench.artifacts.cache import record_use
from virtbench.experiments.session import Session
from virtbench.host import cgroups, testbed
from virtbench.host.state import RunState
from virtbench.loadgen import Clients
from virtbench.measure.probe import ProbeListener
from virtbench.measure.quiet import Primer, Quiet
from virtbench.measure.sampler import HostSampler
from virtbench.metrics.run import IMAGE_SIZE
from virtbench.run import cleanup
from virtbench.run import resume as resumes
from virtbench.run.harness import Surroundings
from virtbench.run.preflight import (
    apply_sysctl,
    check_available,
    named_runtimes,
    not_run,
    not_run_line,
)
from virtbench.run.teardown import Held, sigterm_as_interrupt, teardown, uninterruptible
from virtbench.runtimes.base import Runtime, RuntimeContext
from virtbench.spec.resolved import Part, Plan
from virtbench.store import Store
from virtbench.store.records import RunRecord


@dataclass(frozen=True)
class Invocation:
    """How a run was asked for: its command line (stored with the run; None: this
    process's), who is told its id once it has one, the interrupted or failed run it goes
    on with (None: a new run), and its labels (`host` and `fleet`: a fleet run on one of
    its hosts)."""

    argv: list[str] | None = None
    started: Callable[[str], None] | None = None
    resume: RunRecord | None = None
    labels: dict[str, str] | None = None


def execute(plan: Plan, where: Surroundings, asked: Invocation | None = None) -> tuple[str, str]:
    """Run `plan` (a resolved spec; or go on with `asked.resume`, whose spec it is) within
    `where` (its store, paths and harness: the host as the run prepares, reads and cleans
    it); returns (run id, final status). Its drivers are the plan's (a test's fake, say).
    KeyboardInterrupt is re-raised after cleanup."""
    asked = asked if asked is not None else Invocation()
    runs, versions, skipped = check_available(plan)
    layout = where.harness.layout()
    start = resumes.Resume(asked.resume) if asked.resume is not None else resumes.Start()
    run = Run(runs, where, start, layout)
    run.not_run = not_run(plan, runs)
    return run.execute(asked, versions, skipped)


class Run:
    """One run on this host, from its lock to its teardown."""

    def __init__(
        self, plan: Plan, where: Surroundings, start: resumes.Start, layout: cgroups.Layout
    ) -> None:
        self.plan, self.spec, self.where = plan, plan.spec, where
        self.store, self.paths, self.say = where.store, where.paths, where.say
        self.harness, self.start, self.layout = where.harness, start, layout
        self.run_id = start.run_id
        self.held = Held(engines=plan.engines())
        # the guests the spec brings that no runtime of the run stands for (preflight.py)
        self.not_run: list[dict[str, str]] = []

    def execute(
        self, asked: Invocation, versions: dict[str, str], skipped: list[str]
    ) -> tuple[str, str]:
        argv, labels = asked.argv or sys.argv, asked.labels or {}
        run_state = RunState(self.paths.run_dir(self.run_id)).open()  # before all of the run
        try:
            self.start.before(self.paths, self.layout, self.say, self.harness)
            problems: list[str] = []
            leftovers = self.harness.leftovers(
                self.paths, self.layout, problems=problems, engines=self.held.engines
            )
        except BaseException:
            run_state.close(remove=self.start.removes_state_on_failure)
            raise
        if leftovers:
            self.say(
                f"[yellow]warning[/]: {cleanup.summarize(leftovers)}; "
                "`virtbench clean` removes them"
            )
        for problem in problems:
            self.say(f"[yellow]warning[/]: {problem}")
        status = "failed"
        try:
            with sigterm_as_interrupt():
                self.start.open(self.store, self.spec, argv, labels)
                if asked.started:
                    asked.started(self.run_id)
                self.start.skipped(self.store, skipped, self.say)
                status = self.measure(run_state, argv, versions)
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        finally:
            with uninterruptible():
                self.close(status, run_state)
        return self.run_id, status

    def measure(self, run_state: RunState, argv: list[str], versions: dict[str, str]) -> str:
        """Everything between the run's row and its teardown; the run's final status."""
        spec, store = self.spec, self.store
        env = self.harness.host.snapshot(versions)
        env["testbed"] = testbed.testbed_id(env)
        if spec.named:  # which driver and files each named runtime stood for
            env["named_runtimes"] = named_runtimes(self.plan)
        if self.not_run:  # the guests the study compared that this run has not
            env["not_run"] = self.not_run
            for entry in self.not_run:
                self.say(f"[yellow]not run[/]: {escape(not_run_line(entry))}")
        if spec.sysctl:  # before anything starts: instances see the tuned host
            self.held.sysctl = apply_sysctl(spec, self.paths, run_state)
            env["sysctl"] = self.held.sysctl.apply()
        self.start.environment(store, env, argv)
        artifact = self.harness.artifact(spec.experiment, self.paths)
        record_use(run_state.dir, [artifact.path])  # no prune removes it while this runs
        self.start.artifact(store, artifact.to_dict())
        store.add_artifact(self.run_id, artifact.to_dict())
        session = self.session(run_state, artifact)
        if (remote := session.clients.facts) is not None:
            env["loadgen"] = remote  # the load generator, and the pair's baselines
            env["testbed"] = testbed.testbed_id(env)  # the pair's
        self.check(session, artifact)
        self.held.sampler = session.sampler = HostSampler(
            lambda pts: store.add_series(self.run_id, pts), interval=spec.sample_interval_s
        ).start()
        assert self.held.ctx is not None
        self.held.primer = prepare_quiet(
            session, self.held.drivers, self.held.ctx, quiescence=spec.quiescence
        )
        self.start.quiescence(
            store,
            env,
            {
                "enabled": spec.quiescence,
                "window_ms": round(session.quiet.window_s * 1e3, 3),
                "other_runnable_before": session.quiet.background,
                "primer": self.held.primer is not None,
            },
        )
        for part in self.plan.parts:
            self.experiment(session, part)
        if session.superseded:  # a resume must measure again what was cut short
            left = sorted(k for _, k in session.superseded)
            store.add_event(
                self.run_id,
                "error",
                f"resume: {len(left)} units cut short "
                f"were not measured again ({', '.join(left[:3])}); their "
                "earlier samples are kept",
            )
            return "failed"
        return "completed"

    def session(self, run_state: RunState, artifact: Artifact) -> Session:
        """The probe, the drivers (set up: daemons, images) and the session over them."""
        held = self.held
        held.probe = ProbeListener(run_state.dir / "probe")
        held.ctx = RuntimeContext(
            self.run_id,
            run_state,
            self.paths,
            self.layout,
            probe=held.probe,
            rootfs=artifact.path,
            runs_commands=any(p.experiment.RUNS_COMMANDS for p in self.plan.parts),
        )
        held.drivers = {label: r.create(held.ctx) for label, r in self.plan.runtimes.items()}
        for label, drv in held.drivers.items():  # daemons, images: never inside a measurement
            self.say(f"setting up {label}")
            drv.setup()
        clients = self.clients(held.ctx)
        session = Session(
            self.run_id,
            self.spec,
            self.store,
            artifact,
            held.probe,
            held.drivers,
            metrics.is_repeated,
            say=self.say,
            host=self.harness.host,
            instances=self.plan.instances(),
            clients=clients,
        )
        self.start.session(session)
        return session

    def clients(self, ctx: RuntimeContext) -> Clients:
        """Where the serving workloads' clients run: this host, or the spec's load
        generator, connected to (loadgen/remote.py)."""
        lg = self.spec.loadgen
        if lg is None:
            return Clients()
        from virtbench.loadgen.remote import Remote

        self.say(f"connecting to the load generator {lg.host}")
        self.held.clients = remote = Remote(lg.host, lg.ssh_options, ctx)
        remote.open()
        return remote

    def check(self, session: Session, artifact: Artifact) -> None:
        """A spec that cannot run fails before its first sample; then each runtime's image
        size, once per run."""
        for part in self.plan.parts:
            check = experiments.get(part.type).check
            if check is not None and part.runtimes:
                with session.only(list(part.runtimes), part.index):
                    check(session, part.experiment)
        samples = self.store.samples(self.run_id)
        measured = {smp.runtime for smp in samples if smp.experiment == "image"}
        for label, drv in self.held.drivers.items():
            if label not in measured:
                record_image_size(self.store, self.run_id, label, drv, artifact)

    def experiment(self, session: Session, part: Part) -> None:
        """One experiment of the plan, unless a resumed run finished it or none of its
        runtimes is in this run."""
        exp = part.experiment
        whole = ("experiment", json.dumps([part.index, exp.type]))
        if whole in session.done:
            self.say(f"[bold]{exp.type}[/]: finished before the interruption")
            return
        these = list(part.runtimes)
        if not these:  # a study's part for runtimes this run does not have
            if not exp.runtimes:  # none of its runtimes can run it here: said above
                self.say(f"[bold]{exp.type}[/]: skipped (no runtime here can run it)")
                return
            why = f"it runs on {', '.join(exp.runtimes)}, which this run does not"
            self.say(f"[bold]{exp.type}[/]: skipped ({why})")
            self.start.skip_event(self.store, f"skipped: {exp.type}: {why}")
            return
        self.say(f"[bold]{exp.type}[/] on {', '.join(these)}")
        with session.only(these, part.index):
            experiments.get(exp.type).run(session, exp)
        if not any(e == exp.type for e, _ in session.superseded):
            self.store.add_unit(self.run_id, *whole)  # (else a later resume tries it again)
            session.done.add(whole)

    def close(self, status: str, run_state: RunState) -> None:
        """Stop everything of the run, put the host's sysctl back, and store its status;
        each step runs even if an earlier one failed."""
        store, run_id, held = self.store, self.run_id, self.held
        if status == "interrupted":
            self.say("[yellow]interrupted[/]: stopping every instance")
        try:
            if held.primer is not None:
                try:
                    held.primer.close()
                except Exception as exc:
                    store.add_event(run_id, "error", f"cleanup: quiet sentinel: {exc}")
            errors = teardown(run_id, self.where, self.layout, held)
            if held.sysctl is not None:  # after every instance: the host as it was
                errors += held.sysctl.restore()
            for e in errors:
                store.add_event(run_id, "error", f"cleanup: {e}")
            for level, said in self.harness.prune_cache(self.paths, run_id):
                store.add_event(run_id, level, said)
        finally:
            try:
                store.finish_run(run_id, status)
            finally:
                run_state.close(remove=not self.held.remote_left)
                with contextlib.suppress(OSError):  # the last run out: shared parents
                    cleanup.remove_empty_parents(self.layout)


def prepare_quiet(
    session: Session, drivers: dict[str, Runtime], ctx: RuntimeContext, *, quiescence: bool
) -> Primer | None:
    """Timed launches wait for a quiet host (measure/quiet.py): the previous instance's
    lingering supervisors gone, nothing else runnable. Other work found on the host
    before the first launch is said in an event: every sample then counts as under load.
    `quiescence`: the spec's (off: launches follow one another at once)."""
    spec = session.spec
    session.quiet = Quiet(
        running=session.host.running,
        settled=lambda: all(d.settled() for d in drivers.values()),
        enabled=quiescence,
    )
    if len(spec.runtimes) > 1:
        session.event(
            "info",
            "order: runtimes measured in the rows of a Williams design (each follows each "
            f"other equally often), seed {session.order_seed}",
        )
    if not quiescence:
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
        IMAGE_SIZE.sample(
            size[0] / 2**20,
            experiment="image",
            runtime=label,
            workload=artifact.name,
            repetition=0,
            params={"measured_by": size[1], "artifact": artifact.digest[:16]},
        ),
    )
