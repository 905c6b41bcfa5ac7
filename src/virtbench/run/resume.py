"""Starting a run, or going on with an interrupted one (`run --resume`).

`Start` is what a new run does at each step where a resume differs: a new id, a new row
in the store, its skips and environment stored. `Resume` goes on under the run's own id
and stored spec: what the run left on the host goes first, its events say what changed
since, and units it cut short are measured again whole, their earlier samples kept until
then (Session.finished). The runner asks the one it holds; it never asks which it is.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from virtbench import experiments, naming
from virtbench.errors import ListingError, VirtbenchError
from virtbench.experiments.session import Session
from virtbench.host import cgroups
from virtbench.paths import Paths
from virtbench.run import cleanup
from virtbench.run.harness import Harness
from virtbench.spec import Spec
from virtbench.store import Store
from virtbench.store.records import RunRecord


class Start:
    """A new run."""

    removes_state_on_failure = True  # a run that never began leaves no state directory

    def __init__(self) -> None:
        self.run_id = naming.new_run_id()

    def before(
        self, paths: Paths, layout: cgroups.Layout, say: Callable[[str], None], harness: Harness
    ) -> None:
        """With the run's lock held, before anything is created: nothing to remove."""

    def open(self, store: Store, spec: Spec, argv: list[str], labels: dict[str, str]) -> None:
        store.create_run(self.run_id, spec.name, argv, spec.model_dump(mode="json"), **labels)

    def skipped(self, store: Store, lines: list[str], say: Callable[[str], None]) -> None:
        """What preflight skipped (a runtime this host cannot run), said and stored."""
        for line in lines:
            say(f"[yellow]skipped[/]: {line}")
            store.add_event(self.run_id, "warning", f"skipped: {line}", said=True)

    def environment(self, store: Store, env: dict[str, Any], argv: list[str]) -> None:
        store.set_environment(self.run_id, env)

    def artifact(self, store: Store, now: dict[str, Any]) -> None:
        """The artifact the run measures with, once built."""

    def session(self, session: Session) -> None:
        """The session before its first experiment: nothing done yet."""

    def skip_event(self, store: Store, text: str) -> None:
        """An experiment skipped for want of its runtimes: a warning, once."""
        store.add_event(self.run_id, "warning", text, said=True)

    def quiescence(self, store: Store, env: dict[str, Any], quiet: dict[str, Any]) -> None:
        """How quiet the host was, beside the rest of its facts."""
        env["quiescence"] = quiet
        store.set_environment(self.run_id, env)


class Resume(Start):
    """An interrupted or failed run, going on under its own id."""

    removes_state_on_failure = False

    def __init__(self, run: RunRecord) -> None:
        if run.status == "completed":
            raise VirtbenchError(f"run {run.id} completed: nothing to resume")
        self.run = run
        self.run_id = run.id

    def before(
        self, paths: Paths, layout: cgroups.Layout, say: Callable[[str], None], harness: Harness
    ) -> None:
        remove_own_leftovers(self.run, paths, layout, say, harness)

    def open(self, store: Store, spec: Spec, argv: list[str], labels: dict[str, str]) -> None:
        store.reopen_run(self.run_id)

    def skipped(self, store: Store, lines: list[str], say: Callable[[str], None]) -> None:
        """Said when the run started."""

    def environment(self, store: Store, env: dict[str, Any], argv: list[str]) -> None:
        resume_events(store, self.run, env, argv)

    def artifact(self, store: Store, now: dict[str, Any]) -> None:
        artifact_event(store, self.run, now)

    def session(self, session: Session) -> None:
        session.resumed, session.done = True, session.store.units(self.run_id)
        note_unfinished(session)

    def skip_event(self, store: Store, text: str) -> None:
        """Stored when the run started."""

    def quiescence(self, store: Store, env: dict[str, Any], quiet: dict[str, Any]) -> None:
        """The run's environment is the one it started with."""


def remove_own_leftovers(
    run: RunRecord,
    paths: Paths,
    layout: cgroups.Layout,
    say: Callable[[str], None],
    harness: Harness,
) -> None:
    """Before a resume measures anything (the run's lock held): whatever the run left on
    the host (it was killed) is removed, so its instance names are free again; a
    leftover that cannot be listed or removed stops the resume."""
    try:
        rest = harness.leftovers(paths, layout, run_id=run.id, include_live=True)
    except ListingError as exc:
        raise VirtbenchError(f"run {run.id}: cannot resume: {exc}") from exc
    rest = [r for r in rest if r.kind != "state"]  # its state directory is in use again
    if rest:
        say(f"removing what run {run.id} left: {cleanup.summarize(rest)}")
        errors = harness.remove(rest, layout)
        if errors:
            raise VirtbenchError(f"run {run.id}: cannot remove what it left: {errors[0]}")


def resume_events(store: Store, run: RunRecord, env: dict[str, Any], argv: list[str]) -> None:
    """Say in the run's events that it was resumed, and by what; a host or runtime that
    changed since it started is a warning (the samples keep the versions they were taken
    with only through these events)."""
    store.add_event(run.id, "info", f"resumed ({run.status}) by: {' '.join(argv)}")
    before = run.environment.get("runtimes", {})
    for label, version in env.get("runtimes", {}).items():
        if label in before and before[label] != version:
            store.add_event(
                run.id, "warning", f"resume: {label} is now {version} (was {before[label]})"
            )


def artifact_event(store: Store, run: RunRecord, now: dict[str, Any]) -> None:
    """On resume: an artifact built differently from the one the run started with (its
    programs rebuilt, its packages updated) is a warning; samples say which they used
    (`params.artifact`)."""
    before = [a for a in run.artifacts if a.get("name") == now.get("name")]
    if before and all(a.get("digest") != now.get("digest") for a in before):
        was = ", ".join(str(a.get("digest", ""))[:16] for a in before)
        store.add_event(
            run.id,
            "warning",
            f"resume: artifact {now.get('name')} is now {str(now.get('digest'))[:16]} (was "
            f"{was}); each sample's params.artifact says which it was measured with",
        )


def note_unfinished(session: Session) -> None:
    """Units the interrupted run did not finish are measured again whole. Their samples
    stay in the store until the new ones are (Session.finished then removes them), so a
    resume that fails too loses nothing. Warm-ups and image sizes stay."""
    done = session.done
    cut: set[tuple[str, str]] = set()
    for smp in session.store.samples(session.run_id):
        if smp.warmup or smp.experiment not in experiments.names():
            continue
        key = Session.sample_unit(smp)
        if (smp.experiment, key) not in done:
            cut.add((smp.experiment, key))
    session.superseded, session.resumed_at = cut, time.time()
    finished = len([d for d in done if d[0] != "experiment"])
    msg = f"resume: {finished} units already measured are skipped"
    if cut:
        msg += (
            f"; {len(cut)} units the interruption cut short are measured again (their "
            "samples are kept until the new ones are stored)"
        )
    session.event("info", msg)
