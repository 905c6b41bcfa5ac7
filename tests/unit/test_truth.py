"""Every experiment, the runner and `compare` recover what the fake runtime was told.

The fake runtime (tests/fakeruntime.py) follows an injected Truth (tests/faketruth.py):
boot durations, growth with running instances, memory per instance, a carry-over from a
stop that has not settled, slowdowns by attackers. virtbench's own experiment code runs
on it unchanged (no root, nothing started), and each test checks that what virtbench
reports is what was injected: within its 95% CI where virtbench gives one, within a
tolerance otherwise. With many intervals in one test, about 5% of them miss the truth by
chance alone, so such tests allow the few misses that a 1% risk allows (binomial), and
hold every point estimate to a tolerance as well (tests/recovered.py). The experiments
that measure a worker (scalability, throughput, isolation): test_truth_workers.py.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict

import numpy as np
import pytest
from tests.fakehost import FakeHarness
from tests.fakeruntime import fake_session, install, run, tmp_paths, values
from tests.faketruth import RuntimeTruth, Truth
from tests.recovered import covered, median_case

from virtbench.analysis.order import order_effects
from virtbench.report.compare import compare
from virtbench.report.fits import baseline_refusal, cost_cells, cost_fits
from virtbench.report.trust import trust_notes
from virtbench.run import runner
from virtbench.run.harness import Surroundings
from virtbench.spec import parse
from virtbench.spec.resolved import resolve
from virtbench.store import Sample, Store

ALL = ["fa", "fb", "fc"]


def by_predecessor(samples: list[Sample], metric: str) -> list[tuple[str, list[tuple[str, float]]]]:
    """order_effects' groups: per runtime, (predecessor, value) of `metric`."""
    groups: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for x in samples:
        if x.metric == metric and x.value is not None:
            groups[f"{metric} on {x.runtime}"].append((x.params["predecessor"], x.value))
    return sorted(groups.items())


# --- boot -----------------------------------------------------------------------------
BOOT = Truth(
    {
        "fa": RuntimeTruth(exit_ms=10.0, ready_ms=25.0, carry_ms=4.0, settle_s=0.02),
        "fb": RuntimeTruth(exit_ms=15.0, ready_ms=30.0, cv=0.10),
        "fc": RuntimeTruth(exit_ms=20.0, ready_ms=12.0),
    },
    seed=1,
)


def test_boot_medians_recovered_and_quiescence_removes_the_carry_over(tmp_path, monkeypatch):
    """fa's stop slows the next launch by 4 ms for 20 ms; with quiescence on, every launch
    waits until it settled: the medians are the injected ones and no order effect shows."""
    exp = {"type": "boot", "runs": 30, "warmups": 1}
    with fake_session(tmp_path, BOOT, ALL, exp, order_seed=11) as (s, world):
        samples = run(s)
    cases = []
    for rt, truth in BOOT.runtimes.items():
        cases.append(
            median_case(f"{rt} exit", truth.exit_ms, values(samples, "boot.spawn_to_exit", rt))
        )
        cases.append(
            median_case(f"{rt} ready", truth.ready_ms, values(samples, "boot.spawn_to_ready", rt))
        )
    covered(cases, tolerance=0.10)  # fb: CV 10%, 30 values: 4 SE of the median
    assert world.carried == []  # no launch started before the previous stop settled
    timed = [x for x in samples if x.metric in ("boot.spawn_to_exit", "boot.spawn_to_ready")]
    assert all(x.params["quiet"] for x in timed)
    for metric in ("boot.spawn_to_exit", "boot.spawn_to_ready"):
        assert order_effects(by_predecessor(samples, metric)) == []


def test_without_quiescence_the_carry_over_shows_as_an_order_effect(tmp_path, monkeypatch):
    """quiescence = false: a launch right after fa's stop pays the injected 4 ms, so the
    runtimes measured after fa are flagged, shifted by about that much."""
    exp = {"type": "boot", "runs": 120, "warmups": 0, "workloads": ["hello"]}
    with fake_session(tmp_path, BOOT, ALL, exp, order_seed=11, quiescence=False) as (s, world):
        samples = run(s)
    assert world.carried, "the fake never saw a launch before fa's stop settled"
    effects = order_effects(by_predecessor(samples, "boot.spawn_to_exit"))
    flagged = {e.group.rsplit(" ", 1)[1] for e in effects}
    assert {"fb", "fc"} <= flagged, effects  # fa too: it sometimes follows itself
    # the report's check, over independent units (a boot sample is its repetition's own)
    noted = [text for _, text in trust_notes(samples) if "time to run and exit" in text]
    assert {"fb", "fc"} <= {n.split(" depends")[0].rsplit(" ", 1)[1] for n in noted}, noted
    for e in effects:  # in every flagged group, the slowest is the follower of fa
        assert max(e.medians, key=lambda p: e.medians[p][0]) == "fa", e.text()
    for rt in ("fb", "fc"):
        after: dict[str, list[float]] = defaultdict(list)
        for x in samples:
            if x.runtime == rt and x.metric == "boot.spawn_to_exit":
                after[x.params["predecessor"]].append(x.value)
        other = next(p for p in after if p not in ("fa", rt, ""))
        shift = statistics.median(after["fa"]) - statistics.median(after[other])
        assert abs(shift - 4.0) < 1.5, (rt, shift)  # ~3.5 SE of a difference of medians


def test_many_values_of_one_instance_are_one_unit_for_the_order_effect_check():
    """50 commands in each of 2 instances per predecessor, the instances 20% apart by
    chance: two units a side is no evidence of an order effect (counted one by one, 100
    values a side made p ~ 1e-30). 12 instances a side, 30% apart, are."""
    rng = np.random.default_rng(3)

    def cmds(pred: str, rep: int, level: float) -> list[Sample]:
        return [
            Sample(
                experiment="exec",
                metric="exec.true",
                value=float(v),
                unit="ms",
                direction="lower",
                runtime="fa",
                workload="sleep",
                repetition=rep,
                params={"predecessor": pred},
            )
            for v in level * rng.lognormal(0, 0.05, 50)
        ]

    chance = cmds("fb", 0, 10) + cmds("fb", 1, 10.5) + cmds("fc", 2, 12) + cmds("fc", 3, 12.5)
    assert not [x for _, x in trust_notes(chance) if "order effect" in x]
    real = [
        s
        for r in range(24)
        for s in cmds("fb" if r % 2 else "fc", r, (13 if r % 2 else 10) * rng.lognormal(0, 0.03))
    ]
    noted = [x for _, x in trust_notes(real) if "order effect" in x]
    assert len(noted) == 1 and "a command inside (sleep) on fa" in noted[0], noted
    assert "(n=12)" in noted[0]  # instances, not commands


def test_an_injected_second_mode_is_named_and_a_single_one_is_not(tmp_path, monkeypatch):
    """fa's launches take 10 ms more in 40% of them (a runtime that sometimes retries):
    the notes name fa's group with its two modes and their sizes, and no group of fb or
    fc (one log-normal mode each, fb with a CV of 10%)."""
    truth = Truth(
        {
            "fa": RuntimeTruth(exit_ms=5.0, second_ms=10.0, second_share=0.4),
            "fb": RuntimeTruth(exit_ms=15.0, cv=0.10),
            "fc": RuntimeTruth(exit_ms=20.0),
        },
        seed=5,
    )
    exp = {"type": "boot", "runs": 40, "warmups": 0, "workloads": ["hello"]}
    with fake_session(tmp_path, truth, ALL, exp, order_seed=3) as (s, _):
        samples = run(s)
    notes = [text for _, text in trust_notes(samples) if "two modes" in text]
    assert len(notes) == 1 and notes[0].startswith("time to run and exit (hello) on fa "), notes
    slow = sum(1 for v in values(samples, "boot.spawn_to_exit", "fa") if v > 10)
    low, high = re.findall(r"(\d+) (?:values )?near ([\d.]+) ms", notes[0])
    assert (int(low[0]), int(high[0])) == (40 - slow, slow)
    assert abs(float(low[1]) - 5.0) < 0.5 and abs(float(high[1]) - 15.0) < 1.0, notes


# --- density --------------------------------------------------------------------------
def test_density_recovers_memory_per_instance(tmp_path, monkeypatch):
    """PSS per instance is the injected user side; the host's memory in use grows per
    instance by that PSS plus the injected kernel side, the kernel's by the kernel side,
    the instances' PSS by their PSS: each slope's CI holds the injected value."""
    truth = Truth(
        {
            "fa": RuntimeTruth(pss_mib=3.0, kernel_mib=1.5),
            "fb": RuntimeTruth(pss_mib=40.0, pss_cv=0.05, kernel_mib=8.0),
        },
        seed=2,
    )
    exp = {"type": "density", "instances": 20, "instances_per_benchmark": 5, "runs": 2}
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, world):
        samples = run(s)
    assert world.running == {}
    cases = [
        median_case(f"{rt} {metric}", want, values(samples, f"density.{metric}", rt))
        for rt, t in truth.runtimes.items()
        for metric, want in (
            ("pss", t.pss_mib),
            ("cgroup_anon", t.pss_mib),  # the fake charges its process's memory as anon
            ("cgroup_kernel", t.kernel_mib),
        )
    ]
    covered(cases, tolerance=0.05)
    assert set(values(samples, "density.cgroup_file", "fa")) == {0.0}  # and no page cache
    assert not values(samples, "density.pod_overhead", "fa")  # no pods: no such figure
    fits = cost_fits(samples)
    cases = []
    for rt, t in truth.runtimes.items():
        steps = [x for x in samples if x.runtime == rt and x.metric == "density.host_used"]
        assert sorted({x.background for x in steps}) == [0, 5, 10, 15, 20] and len(steps) == 10
        for metric, injected in (
            ("density.host_cost", t.pss_mib + t.kernel_mib),
            ("density.kernel_cost", t.kernel_mib),
            ("density.user_cost", t.pss_mib),
        ):
            f = fits[(metric, rt)]
            assert f.points == 10 and f.groups == 2
            cases.append((f"{rt} {metric}", injected, f.slope, f.ci_low, f.ci_high))
    covered(cases, tolerance=0.05)


def test_density_of_an_instance_that_costs_nothing_reads_below_resolution(tmp_path, monkeypatch):
    """Injected zero memory: every cost reads "< X MiB", never a negative figure, and no
    ratio may use it as a baseline."""
    truth = Truth(
        {"fa": RuntimeTruth(pss_mib=0.0, pss_cv=0.0, kernel_mib=0.0)}, seed=4, mem_noise_mib=1.0
    )
    exp = {"type": "density", "instances": 20, "instances_per_benchmark": 4, "runs": 1}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, _):
        samples = run(s)
    for (metric, _rt), f in cost_fits(samples).items():
        value, ci = cost_cells(f, metric)
        assert value.startswith("< ") and ci == "below resolution", (metric, value, f)
        assert float(value.split()[1]) > 0
        assert baseline_refusal(f, metric, "fa") is not None


def test_density_says_when_an_instances_memory_cannot_be_read(tmp_path, monkeypatch):
    """The 3rd instance's processes cannot be read: its PSS is a failed sample with why,
    never 0, and every step it is part of says it too; the others are recovered."""
    truth = Truth({"fa": RuntimeTruth(pss_mib=3.0, unreadable=(3,))}, seed=5)
    exp = {"type": "density", "instances": 6, "instances_per_benchmark": 2, "runs": 1}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, world):
        run(s)
        samples = [x for x in s.store.samples(s.run_id) if not x.warmup]
    assert world.running == {}
    pss = [x for x in samples if x.metric == "density.pss"]
    assert [x.value is None for x in pss] == [False, False, True, False, False, False]
    assert "no host process of the instance could be read" in pss[2].error
    assert all(2.5 < x.value < 3.5 for x in pss if x.value is not None)
    steps = {x.background: x for x in samples if x.metric == "density.user_pss"}
    assert sorted(steps) == [0, 2, 4, 6]
    assert steps[0].value == 0 and 5 < steps[2].value < 7
    for n in (4, 6):
        assert steps[n].value is None
        assert f"the memory of 1 of {n} running instances could not be read" in steps[n].error


# --- the runner -----------------------------------------------------------------------
def test_a_whole_spec_runs_on_the_fake_and_leaves_nothing(tmp_path, monkeypatch):
    """runner.execute with boot and density on two fake runtimes, without root: the run
    completes, its samples are stored, nothing of it is left running or on disk."""
    truth = Truth({"fa": RuntimeTruth(), "fb": RuntimeTruth(exit_ms=14.0)}, seed=7)
    world = install(truth)
    spec = parse(
        {
            "name": "whole",
            "runtimes": ["fa", "fb"],
            "order_seed": 7,
            "experiment": [
                {"type": "boot", "runs": 3, "warmups": 1},
                {"type": "density", "instances": 6, "instances_per_benchmark": 3},
            ],
        },
        "test",
        world.drivers,
    )
    store = Store(tmp_path / "results")
    paths = tmp_paths(tmp_path)
    said: list[str] = []
    harness = FakeHarness(world, tmp_path)
    run_id, status = runner.execute(
        resolve(spec),
        Surroundings(store, paths, said.append, harness),
        runner.Invocation(["virtbench", "run"]),
    )
    assert status == "completed" and store.run(run_id).status == "completed"
    samples = store.samples(run_id)
    assert not [x for x in samples if x.error]
    got = {(x.experiment, x.runtime) for x in samples}
    assert got == {(e, r) for e in ("boot", "density", "image") for r in ("fa", "fb")}
    boots = [x for x in samples if x.metric == "boot.spawn_to_exit" and not x.warmup]
    assert len(boots) == 6 and all(x.params["quiet"] for x in boots)
    assert len(values(samples, "density.pss", "fa")) == 6
    assert world.running == {}  # every instance stopped ...
    assert not paths.run_dir(run_id).exists()  # ... and the run's state removed
    events = [(level, m) for _, level, m in store.events(run_id)]
    assert not [e for e in events if e[0] == "error" or "cleanup removed" in e[1]], events
    assert any("seed 7" in m for _, m in events)
    assert harness.host.running_reads > 0  # the quiet wait read the fake host, not /proc
    store.close()


# --- compare --------------------------------------------------------------------------
def test_compare_flags_few_a_a_splits(tmp_path, monkeypatch):
    """Random halves of one fake runtime's repetitions are the same distribution: compare
    calls one half worse or better than the other in at most ~5% of 100 splits. Compared:
    the injected boot times (spawn_to_started and teardown time the fake's own code)."""
    truth = Truth({"fa": RuntimeTruth(cv=0.1)}, seed=8)
    exp = {"type": "boot", "runs": 60, "warmups": 0}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, _):
        samples = run(s)
    rng = np.random.default_rng(0)
    flagged = 0
    for _ in range(100):
        half = set(rng.permutation(60)[:30].tolist())
        a = [x for x in samples if x.repetition in half]
        b = [x for x in samples if x.repetition not in half]
        rows = compare(a, b, with_runtime=True, metrics=["boot.spawn_to_[er]*"])
        assert len(rows) == 2  # spawn_to_exit (hello), spawn_to_ready (sleep)
        flagged += any(r.verdict in ("worse", "better") for r in rows)
    assert flagged <= 8, flagged


def test_the_memory_settle_window_comes_from_the_spec_or_the_environment(monkeypatch):
    from virtbench.errors import SpecError
    from virtbench.experiments.session import SETTLE_ENV, settle_window

    cfg = 15.0
    monkeypatch.delenv(SETTLE_ENV, raising=False)
    assert settle_window(cfg) == 15
    monkeypatch.setenv(SETTLE_ENV, "2.5")
    assert settle_window(cfg) == 2.5
    monkeypatch.setenv(SETTLE_ENV, "soon")
    try:
        settle_window(cfg)
    except SpecError as exc:
        assert SETTLE_ENV in str(exc) and "between 0 and 600" in str(exc)
    else:
        raise AssertionError("a bad value was taken")


# --- min_memory ------------------------------------------------------------------------
def test_min_memory_finds_the_injected_minimum_within_one_step(tmp_path, monkeypatch):
    """fa fails below 100 MiB and halves its figure below 130: the smallest size that
    passes (completes, within 10% of 512 MiB's figure) is 136 in 8 MiB steps; fb needs
    only 20 and never slows: 24 (the true minimum lies within the step below)."""
    truth = Truth(
        {
            "fa": RuntimeTruth(needs_mib=100, tight_mib=130, figure_cv=0.01),
            "fb": RuntimeTruth(needs_mib=20, figure_cv=0.01),
        },
        seed=5,
    )
    exp = {
        "type": "min_memory",
        "workload": "sqlite",
        "low_mib": 8,
        "high_mib": 512,
        "step_mib": 8,
        "runs": 3,
        "params": {"sqlite": {"rows": 1000}},
    }
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, world):
        samples = run(s)
        found = {x.runtime: x.value for x in samples if x.metric == "min_memory.mib"}
        assert found == {"fa": 136.0, "fb": 24.0}
        probes = [x for x in s.store.samples(s.run_id) if x.metric == "min_memory.probe"]
        needs = {"fa": 100, "fb": 20}
        failed = [x for x in probes if x.error]  # did not complete: said, not a figure
        assert failed and all("out of memory" in x.error and x.value is None for x in failed)
        assert all(x.params["memory_mib"] < needs[x.runtime] for x in failed)
        slow = [x for x in probes if not x.error and not x.params["passed"]]
        assert slow and all(x.runtime == "fa" for x in slow)
        assert all(100 <= x.params["memory_mib"] < 130 for x in slow)
        assert all("worse than with 512 MiB" in x.params["why"] for x in slow)
        assert world.running == {}


def test_a_runtime_that_fails_every_boot_fails_the_run_whatever_else_it_measured(tmp_path):
    """fb cannot start in the memory its table gives it: every boot fails and it is skipped,
    while its image's size is measured and fa measures every boot; the run is
    stored completed, but its end names fb, the experiment and why, and exits 1."""
    import typer

    from virtbench.cli.run import _say_end, unmeasured

    truth = Truth({"fa": RuntimeTruth(), "fb": RuntimeTruth(needs_mib=64)}, seed=8)
    world = install(truth)
    spec = parse(
        {
            "name": "nothing",
            "runtimes": ["fa", "fb"],
            "runtime": {"fb": {"memory_mib": 16}},
            "experiment": [{"type": "boot", "runs": 3, "warmups": 0}],
        },
        "test",
        world.drivers,
    )
    store = Store(tmp_path / "results")
    run_id, status = runner.execute(
        resolve(spec),
        Surroundings(store, tmp_paths(tmp_path), [].append, FakeHarness(world, tmp_path)),
        runner.Invocation(["virtbench", "run"]),
    )
    samples = store.samples(run_id)
    assert status == "completed"
    assert {x.runtime for x in samples if x.experiment == "image" and not x.error} == {"fa", "fb"}
    nothing = unmeasured(samples)
    assert nothing == {"fb": "boot: fake: out of memory in 16 MiB"}
    with pytest.raises(typer.Exit) as ended:
        _say_end(run_id, status, nothing)
    assert ended.value.exit_code == 1
    assert world.running == {}
