"""Going on with an interrupted run (`run --resume`): what it left on the host goes
first, its events say what changed since, and units it cut short are measured again
whole, their earlier samples kept until then (Session.finished)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from virtbench import experiments
from virtbench.errors import ListingError, VirtbenchError
from virtbench.experiments.session import Session
from virtbench.host import cgroups
from virtbench.paths import Paths
from virtbench.run import cleanup
from virtbench.run.harness import Harness
from virtbench.store import Store
from virtbench.store.records import RunRecord


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
        if smp.warmup or smp.experiment not in experiments.BUILTIN:
            continue
        key = Session.sample_unit(smp)
        if (smp.experiment, key) not in done:
            cut.add((smp.experiment, key))
    session.superseded, session.resumed_at = cut, time.time()
    finished = len([d for d in done if d[0] != "experiment"])
    msg = f"resume: {finished} units already measured are skipped"
    if cut:
        msg += (f"; {len(cut)} units the interruption cut short are measured again (their "
                "samples are kept until the new ones are stored)")  # fmt: skip
    session.event("info", msg)
