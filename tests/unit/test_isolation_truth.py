"""Isolation on the fake runtime against injected truth: repetitions that adapt until a
slowdown's CI is under its target, the baseline check before any attack, and attackers
placed on a 64-CPU SMT host leaving the worker's whole core free."""

from __future__ import annotations

import math
import re
from pathlib import Path

from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

from virtbench.analysis.stats import slowdown_ci
from virtbench.experiments.isolation_neighbours import pids_limit
from virtbench.experiments.isolation_precision import predicted_width
from virtbench.measure.topology import Topology, format_cpulist, parse_cpulist

ONE = {
    "type": "isolation",
    "worker": "sqlite",
    "attackers": ["cpu"],
    "placements": ["same-cpu"],
    "warmups": 0,
    "settle_s": 0,
}


def said(s) -> list[tuple[float, str, str]]:
    return s.store.events(s.run_id)


def attacked_and_base(samples, rt: str = "fa"):
    base = [
        x for x in samples if x.runtime == rt and x.metric == "inserts_per_s" and x.attacker == ""
    ]
    hit = [
        x
        for x in samples
        if x.runtime == rt and x.metric == "inserts_per_s" and x.attacker == "cpu"
    ]
    return base, hit


def test_adaptive_repetitions_find_an_injected_40pct_slowdown_with_its_ci_under_target(tmp_path):
    """5 repetitions of a worker with a CV of 5% leave a 40% slowdown's CI ~20 points
    wide; the repetitions go on until it is under 10 points, and the truth is inside."""
    truth = Truth({"fa": RuntimeTruth(slowdown={("cpu", "same-cpu"): 1.4})}, seed=11)
    exp = {**ONE, "runs": 5, "ci_target_pct": 10, "max_runs": 100}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, world):
        samples = run(s)
        events = said(s)
    assert world.running == {}
    base, hit = attacked_and_base(samples)
    n = len({x.repetition for x in hit})
    assert 5 < n < 100 and len(base) == n
    point, lo, hi = slowdown_ci(
        [x.value for x in base],
        [x.value for x in hit],
        "higher",
        units_b=[x.repetition for x in base],
        units_a=[x.repetition for x in hit],
    )
    assert (hi - lo) * 100 <= 10, (lo, hi)
    assert lo <= 0.4 <= hi and abs(point - 0.4) < 0.05, (point, lo, hi)
    text = [m for _, _, m in events]
    met = [m for m in text if "slowdown CI width target 10 points met after" in m]
    assert met and f"met after {n} repetitions" in met[0], text
    # the baseline check said it could be done, before the attacks
    pilot = [m for m in text if "5 measurements alone had a CV of" in m]
    assert pilot and "should narrow to 10 points" in pilot[0], text


def test_a_baseline_too_spread_for_the_target_is_said_before_the_attacks(tmp_path):
    """A CV of 30% cannot give a 10-point CI in 8 repetitions: the check says so before
    any attacker runs, the run stops at max_runs and says which slowdown is still wide."""
    truth = Truth({"fa": RuntimeTruth(figure_cv=0.3, slowdown={("cpu", "same-cpu"): 1.4})}, seed=12)
    exp = {**ONE, "runs": 5, "ci_target_pct": 10, "max_runs": 8}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, _):
        samples = run(s)
        events = said(s)
    _, hit = attacked_and_base(samples)
    assert {x.repetition for x in hit} == set(range(8))
    wide = [(t, m) for t, level, m in events if level == "warning" and "too wide" in m]
    assert len(wide) == 1, events
    t_wide, message = wide[0]
    assert t_wide < min(x.t for x in hit)  # before the first attack
    assert "fa: the baseline spread is too wide for the 10-point CI target" in message
    got = re.search(r"about (\d+) points wide after 8 repetitions", message)
    assert got and 40 < int(got.group(1)) < 150, message  # ~6.95 x 0.3 / sqrt(8) = 74
    assert "raise max_runs" in message
    end = [m for _, level, m in events if "8 repetitions (max_runs) and" in m]
    assert end and "fa cpu at same-cpu" in end[0] and "(target 10 points)" in end[0], events


def test_the_predicted_width_matches_the_bootstrap_on_injected_truth(tmp_path):
    """The pilot's prediction is the width the report's bootstrap gives (within 30%)."""
    truth = Truth({"fa": RuntimeTruth(figure_cv=0.1, slowdown={("cpu", "same-cpu"): 1.0})}, seed=13)
    exp = {**ONE, "runs": 30, "ci_target_pct": 0}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, _):
        samples = run(s)
    base, hit = attacked_and_base(samples)
    _, lo, hi = slowdown_ci(
        [x.value for x in base],
        [x.value for x in hit],
        "higher",
        units_b=[x.repetition for x in base],
        units_a=[x.repetition for x in hit],
    )
    assert abs((hi - lo) * 100 / predicted_width(0.1, 30) - 1) < 0.3, (lo, hi)


SMT64 = Topology(tuple(range(64)), {c: (c % 32, c % 32 + 32) for c in range(64)})


def test_all_other_on_a_64_cpu_smt_host_leaves_the_workers_core_and_fits_the_guards(tmp_path):
    """32 cores x 2 threads; the worker on CPU 63 (core 31: threads 31 and 63). all-other
    puts one cpu attacker on each of the other 62 threads, never on 31; the memory attacker
    (240 MiB each) would hold 14,880 MiB there, more than half of 20,000 MiB available: it
    is skipped with the reason; the pids limit is shared by the 62."""
    truth = Truth({"fa": RuntimeTruth()}, seed=14, topology=SMT64, mem_available_mib=20000.0)
    exp = {
        "type": "isolation",
        "worker": "sqlite",
        "attackers": ["cpu", "memory"],
        "runs": 1,
        "warmups": 0,
        "settle_s": 0,
        "ci_target_pct": 0,
    }
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, world):
        samples = run(s)
        events = [m for _, _, m in said(s)]
    assert world.running == {}
    cpus = {
        (x.attacker, x.placement): x.params.get("attacker_cpus")
        for x in samples
        if x.metric == "inserts_per_s"
    }
    assert {x.params["cpus"] for x in samples if x.metric == "inserts_per_s"} == {"63"}
    assert cpus[("cpu", "same-cpu")] == "63" and cpus[("cpu", "smt-sibling")] == "31"
    assert cpus[("cpu", "other-cpu")] == "0"
    spread = parse_cpulist(cpus[("cpu", "all-other")])
    assert len(spread) == 62 and not {31, 63} & set(spread)
    assert ("memory", "all-other") not in cpus and ("memory", "other-cpu") in cpus
    assert any(
        "memory at all-other skipped: 62 attackers would hold 14880 MiB" in m for m in events
    ), events
    said_core = [m for m in events if m.startswith("isolation: all-other:")]
    assert said_core == [
        f"isolation: all-other: one attacker on each of 62 CPUs "
        f"({format_cpulist(spread)}); the worker's core (31,63) is left "
        "to it"
    ]
    # every one of the 62 ran beside the worker: their tasks peaked at one each at least
    peak = [
        x
        for x in samples
        if x.metric == "isolation.attacker_tasks_peak" and x.placement == "all-other"
    ]
    assert peak and peak[0].value >= 62
    limit = next(
        x.params["attacker_pids_limit"]
        for x in samples
        if (x.attacker, x.placement) == ("cpu", "all-other")
    )
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    assert limit == pids_limit(s.spec.experiment[0], 62)
    assert 62 * limit <= max(pid_max // 4, 64 * 62)  # a quarter of the host's, shared


def test_cpulists_round_trip():
    for text in ("0-3,8,10-11", "5", "0-30,32-62"):
        assert format_cpulist(parse_cpulist(text)) == text


def _table_text(s, samples) -> str:
    from rich.console import Console

    from virtbench.report.isolation_table import isolation_table

    console = Console(width=250, record=True, color_system=None)
    console.print(isolation_table("t", samples, ["fa"]))
    return console.export_text()


def test_a_worker_faster_next_to_attackers_is_flagged_and_a_busy_baseline_explains_it(
    tmp_path,
):
    """The injected host runs the worker 15% faster while any CPU outside its core spins
    (cpu or stat at all-other). Against the idle baseline the slowdown is about -13% with
    its whole CI below 0: the table flags it and says why. Against a busy baseline (a
    spinner on each of those CPUs) the same attack reads about 0."""
    busy_host = {("cpu", "all-other"): 1 / 1.15, ("stat", "all-other"): 1 / 1.15}
    truth = Truth({"fa": RuntimeTruth(slowdown=busy_host)}, seed=15)
    exp = {
        "type": "isolation",
        "worker": "sqlite",
        "attackers": ["stat"],
        "placements": ["all-other"],
        "runs": 12,
        "warmups": 0,
        "settle_s": 0,
        "ci_target_pct": 0,
    }
    with fake_session(tmp_path / "idle", truth, ["fa"], exp) as (s, _):
        idle = run(s)
        text = " ".join(_table_text(s, idle).split())
    assert re.search(r"-1\d\.\d% \(-[\d.]+ to -[\d.]+%\) faster", text), text  # the cell
    assert "fa at all-other: faster next to the attacker (stat)" in text  # the caption
    assert "the host's idle states or frequency favour a busy machine" in text
    assert 'baseline = "busy"' in text
    with fake_session(tmp_path / "busy", truth, ["fa"], {**exp, "baseline": "busy"}) as (
        s,
        world,
    ):
        busy = run(s)
        text = " ".join(_table_text(s, busy).split())
    assert world.running == {}
    base = [x for x in busy if x.attacker == "" and x.metric == "inserts_per_s"]
    assert all(x.params["baseline"] == "busy" and x.params["spinner_cpus"] == "0,1" for x in base)
    hit = [x.value for x in busy if x.attacker == "stat" and x.metric == "inserts_per_s"]
    point, lo, hi = slowdown_ci([x.value for x in base], hit, "higher")
    assert lo <= 0 <= hi and abs(point) < 0.05, (point, lo, hi)
    assert "faster next to" not in text
    flagged = [x for x in idle if x.attacker == "stat" and x.metric == "inserts_per_s"]
    p_idle, _, hi_idle = slowdown_ci(
        [x.value for x in idle if x.attacker == "" and x.metric == "inserts_per_s"],
        [x.value for x in flagged],
        "higher",
    )
    assert hi_idle < 0 and abs(p_idle - (1 / 1.15 - 1)) < 0.04, p_idle


def test_a_slowdown_that_cannot_be_judged_is_never_counted_as_met():
    from virtbench.experiments.isolation_precision import judged

    six = ([1000.0, 990.0, 1010.0, 1005.0, 995.0, 1000.0], list(range(6)))
    assert judged(([], []), six, "higher") == (math.inf, " (no successful baseline)")
    three = (six[0][:3], six[1][:3])
    assert judged(six, three, "higher") == (math.inf, " (only 3 successful repetitions)")
    width, why = judged(six, six, "higher")
    assert why == "" and 0 < width < 5


def test_the_baseline_checks_resource_series_are_not_drawn():
    from virtbench.report.plots_studies import resources

    pilot = "proc/crun/nginx/isolation,0,,,/1/pilot/server.cpu_pct"
    assert resources([(pilot, 0.0, 50.0), (pilot, 1.0, 60.0)], ["crun"]) == []
    kept = pilot.replace("/pilot", "")
    series = [
        (kept, 0.0, 50.0),
        (kept, 1.0, 60.0),
        (kept.replace("cpu_pct", "rss_mib"), 0.0, 9.0),
        (kept.replace("cpu_pct", "rss_mib"), 1.0, 9.5),
    ]
    assert len(resources(series, ["crun"])) == 1
