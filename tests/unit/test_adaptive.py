"""Adaptive repetition (--target-cv, --max-runs): repetitions go on past `runs` until
every group's CV meets the target, or stop at max_runs and say so."""

from __future__ import annotations

from virtbench import metrics
from virtbench.experiments.session import Session
from virtbench.spec import parse
from virtbench.store import Sample, Store


def session(tmp_path, **exp) -> tuple[Session, Store]:
    experiment = {"type": "boot", "runs": 3, "warmups": 1, **exp}
    spec = parse({"name": "a", "runtimes": ["crun"], "experiment": [experiment]}, "t")
    store = Store(tmp_path)
    store.create_run("aaaaa1", "a", [], {})
    s = Session("aaaaa1", spec, store, None, None, {}, metrics.is_repeated, say=lambda m: None)  # type: ignore[arg-type]
    return s, store


def drive(s: Session, values) -> list[int]:
    """Run the schedule, recording values[rep] for each measured repetition."""
    cfg = s.spec.experiment[0]
    reps = []
    for rep, warmup, _ in s.repetitions("boot", cfg):
        s.record(
            Sample(
                "boot",
                "boot.spawn_to_exit",
                999.0 if warmup else values(rep),
                "ms",
                "lower",
                "crun",
                "hello",
                rep,
                warmup=warmup,
            )
        )
        if not warmup:
            reps.append(rep)
    return reps


def test_without_a_target_the_runs_are_the_runs(tmp_path):
    s, _ = session(tmp_path)
    assert drive(s, lambda rep: 10.0) == [0, 1, 2]


def test_repeats_until_the_cv_target_is_met(tmp_path):
    s, store = session(tmp_path, target_cv=5, max_runs=50)
    # two spread values first, then steady ones: the CV falls below 5% after some more
    reps = drive(s, lambda rep: {0: 8.0, 1: 12.0}.get(rep, 10.0))
    assert 3 < len(reps) < 50 and reps == list(range(len(reps)))
    events = [m for _, _, m in store.events("aaaaa1")]
    assert any(f"CV target 5% met after {len(reps)} repetitions" in m for m in events), events


def test_stops_at_max_runs_and_says_why(tmp_path):
    s, store = session(tmp_path, target_cv=1, max_runs=6)
    reps = drive(s, lambda rep: 10.0 if rep % 2 else 20.0)  # never below 1%
    assert reps == [0, 1, 2, 3, 4, 5]
    ((level, message),) = [(lv, m) for _, lv, m in store.events("aaaaa1")]
    assert level == "warning" and "6 repetitions (max_runs)" in message
    assert "crun boot.spawn_to_exit" in message and "target 1%" in message


def test_default_limit_is_ten_times_runs(tmp_path):
    s, _ = session(tmp_path, target_cv=1)
    assert s.spec.experiment[0].run_limit() == 30


def test_a_resumed_run_does_not_stop_before_the_repetitions_begun_before(tmp_path):
    """Interrupted at repetition 8 of an adaptive boot (its CV already met): the resumed
    schedule goes on through repetition 8, so a unit cut short there is measured again
    rather than left unfinished."""
    s, _ = session(tmp_path, target_cv=5, max_runs=50)
    for rep in range(9):
        s.record(Sample("boot", "boot.spawn_to_exit", 10.0, "ms", "lower", "crun", "hello", rep))
    s.resumed = True
    assert s.begun("boot") == 9
    assert drive(s, lambda rep: 10.0) == list(range(9))
    fresh, _ = session(tmp_path / "fresh", target_cv=5, max_runs=50)
    assert drive(fresh, lambda rep: 10.0) == [0, 1, 2]  # not resumed: runs, then the target
