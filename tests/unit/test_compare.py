"""`virtbench compare` on runs of the fake runtime (tests/fakerun.py): an injected 10%
slowdown is flagged, identical data is not, and the exit code tells a CI job which."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fakerun import fake_run
from tests.schemas import BMF_SCHEMA
from typer.testing import CliRunner

from virtbench.cli import app
from virtbench.store import Store

runner = CliRunner()


def compare(tmp_path, *args):
    argv = ["compare", *args, "--results", str(tmp_path)]
    return runner.invoke(app, argv, env={"COLUMNS": "200"})


def test_compare_flags_an_injected_10pct_slowdown(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"fake": 1.0}, seed=1)
    fake_run(store, "bbbbb2", {"fake": 1.10}, seed=2)
    res = compare(tmp_path, "aaaaa1", "bbbbb2")
    assert res.exit_code == 1, res.output  # a regression: CI fails
    line = next(ln for ln in res.output.splitlines() if "time to run and exit" in ln and "│" in ln)
    assert "worse" in line and "+" in line
    assert "B (bbbbb2) is 1.1" in res.output and "slower than A (aaaaa1)" in res.output
    assert "2 worse, 0 better, 0 no change" in res.output  # spawn_to_exit and teardown
    # the other way round it is an improvement, and that is not a failure
    res = compare(tmp_path, "bbbbb2", "aaaaa1")
    assert res.exit_code == 0 and "better" in res.output
    res = compare(tmp_path, "bbbbb2", "aaaaa1", "--fail-on", "change")
    assert res.exit_code == 1
    res = compare(tmp_path, "aaaaa1", "latest")  # the run started last: bbbbb2
    assert res.exit_code == 1 and "B = bbbbb2" in res.output


def test_compare_reports_no_change_on_identical_data(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"fake": 1.0}, seed=7)
    fake_run(store, "bbbbb2", {"fake": 1.0}, seed=7)  # the same samples again
    res = compare(tmp_path, "aaaaa1", "bbbbb2")
    assert res.exit_code == 0, res.output
    assert "0 worse, 0 better, 2 no change" in res.output


def test_compare_has_no_false_alarm_on_two_samples_of_the_same_distribution(tmp_path):
    store = Store(tmp_path)
    for seed in range(5):  # five independent pairs, none of them a real change
        fake_run(store, f"aaaa{seed}a", {"fake": 1.0}, seed=100 + seed)
        fake_run(store, f"bbbb{seed}b", {"fake": 1.0}, seed=200 + seed)
        res = compare(tmp_path, f"aaaa{seed}a", f"bbbb{seed}b")
        assert res.exit_code == 0, res.output
        assert "0 worse, 0 better, 2 no change" in res.output


def test_compare_counts_failed_and_missing_measurements_as_regressions(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"crun": 1.0}, experiments=("boot", "throughput"), seed=1)
    fake_run(store, "bbbbb2", {"crun": 1.0}, experiments=("boot",), seed=1)
    res = compare(tmp_path, "aaaaa1", "bbbbb2")
    assert res.exit_code == 1, res.output  # B lost its throughput measurements
    assert "7 missing" in res.output  # 3 postgres levels, 4 latency percentiles
    tps4 = next(ln for ln in res.output.splitlines() if "transactions/s at 4" in ln)
    assert tps4.count("missing") == 1


def test_compare_too_few_samples_is_inconclusive(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"crun": 1.0}, n=3, seed=1)
    fake_run(store, "bbbbb2", {"crun": 1.0}, n=3, seed=2)
    res = compare(tmp_path, "aaaaa1", "bbbbb2")
    assert res.exit_code == 3 and "inconclusive" in res.output and "2 too few" in res.output


def test_compare_two_runtimes_of_one_run_with_levels_and_too_few(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "ccccc3", {"crun": 1.0, "runc": 1.5}, experiments=("boot", "throughput"))
    res = compare(tmp_path, "ccccc3", "--runtimes", "crun,runc", "--metric", "tps*,boot.*")
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.output.splitlines() if "│ transactions/s at" in ln]
    assert len(lines) == 3 and all("worse" in ln for ln in lines)  # one row per level
    assert "transactions/s at 4 (postgres)" in res.output
    res = compare(tmp_path, "ccccc3", "--runtimes", "crun,docker")
    assert res.exit_code == 2 and "--runtimes: run ccccc3 has no 'docker' samples" in res.output


def test_compare_input_errors_name_the_flag(tmp_path):
    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"fake": 1.0})
    assert "--runtimes: give two runtimes" in compare(tmp_path, "aaaaa1").output
    assert "--alpha" in compare(tmp_path, "aaaaa1", "aaaaa1", "--alpha", "2").output
    assert "--fail-on" in compare(tmp_path, "aaaaa1", "aaaaa1", "--fail-on", "x").output
    res = compare(tmp_path, "aaaaa1", "zzzzz9")
    assert res.exit_code == 2 and "run 'zzzzz9' not found" in res.output
    res = compare(tmp_path, "aaaaa1", "aaaaa1", "--metric", "nothing.*")
    assert res.exit_code == 2 and "no measurement appears on both sides" in res.output


def test_compare_memory_costs_by_their_slopes_and_refuses_a_baseline_below_resolution(tmp_path):
    """Memory per instance is compared as fitted slopes; where A's is below resolution (an
    instance that costs nothing) there is no ratio, one line says why, and the verdict is
    decided on the difference."""
    store = Store(tmp_path)
    fake_run(store, "ddddd4", {"crun": 1.0}, experiments=("density",), seed=1)
    fake_run(store, "eeeee5", {"crun": 1.5}, experiments=("density",), seed=2)
    res = compare(tmp_path, "ddddd4", "eeeee5")
    assert res.exit_code == 1, res.output
    host = next(ln for ln in res.output.splitlines() if ln.startswith("│ memory per instance"))
    assert "worse" in host and ("+49.9" in host or "+50" in host) and "6/6 steps" in host, host
    fake_run(store, "fffff6", {"native": 0.0, "crun": 1.0}, experiments=("density",), seed=3)
    res = compare(tmp_path, "fffff6", "--runtimes", "native,crun")
    lines = res.output.splitlines()
    # no ratio to nothing: decided on the difference, in the figure's unit, not a %
    host = next(ln for ln in lines if ln.startswith("│ memory per instance"))
    assert "< " in host and "%" not in host and "worse" in host, host
    assert any("MiB" in c or "KiB" in c for c in host.split("│")[4:5]), host
    why = [ln for ln in lines if ln.startswith("no ratio:")]
    assert any(
        ln.startswith("no ratio: memory per instance")
        and "A's slope is below the method's resolution" in ln
        for ln in why
    ), why
    assert any("PSS of each new instance" in ln and "median is 0 KiB" in ln for ln in why), why


def test_compare_writes_markdown_and_bencher_json_with_the_same_verdicts_and_exit(tmp_path):
    """--markdown: the verdict table a pull request's comment shows, a row per measure
    with the verdict the terminal gives; --json: B's medians in Bencher Metric Format;
    the exit status is the one compare gives without them."""
    import json
    import statistics

    import jsonschema

    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"fake": 1.0}, seed=1)
    fake_run(store, "bbbbb2", {"fake": 1.10}, seed=2)
    md, js = tmp_path / "v.md", tmp_path / "v.json"
    res = compare(tmp_path, "aaaaa1", "bbbbb2", "--markdown", str(md), "--json", str(js))
    assert res.exit_code == 1, res.output
    table = [ln for ln in md.read_text().splitlines() if ln.startswith("| ")]
    assert table[0].startswith("| measure | A | B | change (95% CI) |")
    assert "**A = aaaaa1, B = bbbbb2: B against A" in md.read_text()
    spawn = next(ln for ln in table if ln.startswith("| time to run and exit (hello, fake)"))
    assert spawn.endswith("| **worse** |") and "+" in spawn
    assert "2 worse" in md.read_text()
    assert "- B (bbbbb2) is 1.1" in md.read_text()  # the sentence above the table
    data = json.loads(js.read_text())
    jsonschema.validate(data, BMF_SCHEMA)
    spawn_b = data["time to run and exit (hello, fake) bbbbb2"]["ms"]["value"]
    times_a = data["time to run and exit (hello, fake) bbbbb2"]["times-a"]
    assert times_a["lower_value"] < 1.10 < times_a["upper_value"], times_a  # the injected 1.1x
    rows = [
        s.value
        for s in store.samples("bbbbb2")
        if s.metric == "boot.spawn_to_exit" and not s.warmup
    ]
    assert spawn_b == statistics.median(rows)
    res = compare(tmp_path, "aaaaa1", "bbbbb2", "--json", str(tmp_path / "no" / "x.json"))
    assert res.exit_code == 2 and "--json" in res.output and "cannot write" in res.output


def test_the_change_comes_with_its_ci_and_the_injected_truth_is_inside(tmp_path):
    """B's boots injected 10% slower: the change's 95% CI (a bootstrap of both medians
    over repetitions) holds +10% and excludes 0; identical data's holds 0."""
    import re

    from virtbench.report.compare import compare as rows_of

    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"fake": 1.0}, seed=1)
    fake_run(store, "bbbbb2", {"fake": 1.10}, seed=2)
    rows = rows_of(store.samples("aaaaa1"), store.samples("bbbbb2"), with_runtime=True)
    row = next(r for r in rows if r.key[1] == "boot.spawn_to_exit")
    lo, hi = row.ci
    assert lo < 0.10 < hi and lo > 0, row.ci
    res = compare(tmp_path, "aaaaa1", "bbbbb2")
    line = " ".join(res.output.split())
    got = re.search(r"time to run and exit.*?\+[\d.]+% \(([\d.]+)-([\d.]+)%\)", line)
    assert got and float(got.group(1)) < 10 < float(got.group(2)), line
    same = rows_of(store.samples("aaaaa1"), store.samples("aaaaa1"), with_runtime=True)
    row = next(r for r in same if r.key[1] == "boot.spawn_to_exit")
    assert row.ci[0] <= 0 <= row.ci[1]


def test_runs_from_different_testbeds_get_no_verdict_unless_asked(tmp_path):
    """A run on a 2-CPU host against one on a 16-CPU host: compare refuses (exit 2),
    naming what differs; `--across-testbeds` compares them and says so. Runs on one
    testbed, or without recorded facts, compare as before."""
    from virtbench.host import testbed

    store = Store(tmp_path)
    fake_run(store, "aaaaa1", {"fake": 1.0}, seed=1)
    fake_run(store, "bbbbb2", {"fake": 1.0}, seed=2)
    host = {"cpu_model": "AMD EPYC", "cpu_count": 2, "kernel": "6.1.0", "kvm": "yes"}
    store.set_environment("aaaaa1", host)
    store.set_environment("bbbbb2", {**host, "cpu_count": 16})
    res = compare(tmp_path, "aaaaa1", "bbbbb2")
    assert res.exit_code == 2, res.output
    assert "different testbeds" in res.output and "cpu count 2 vs 16" in res.output
    res = compare(tmp_path, "aaaaa1", "bbbbb2", "--across-testbeds")
    assert res.exit_code == 0 and "across testbeds: aaaaa1 ran on AMD EPYC x2" in res.output
    store.set_environment("bbbbb2", dict(host))
    assert compare(tmp_path, "aaaaa1", "bbbbb2").exit_code == 0  # one testbed
    assert testbed.testbed_id(host) == testbed.testbed_id(dict(host)) != ""
    assert testbed.testbed_id({**host, "loadgen": {"host": "lg1"}}) != testbed.testbed_id(host)
    assert testbed.testbed_id({}) == "" and testbed.differences({}, host) == []


def test_a_figure_where_more_is_better_that_fell_to_zero_is_without_end_worse():
    import math

    from virtbench.analysis.significance import ABResult
    from virtbench.report.compare import Row
    from virtbench.report.compare_words import times

    r = ABResult(5, 5, 10.0, 0.0, -1.0, 0.01)
    key = ("throughput", "nginx.requests_per_s", "req/s", "nginx", "0", "", "", "")
    row = Row(key, "higher", r, 0.01, "worse", ci=(-1.0, -0.5))
    assert times(row) == (math.inf, 2.0, math.inf)


MIRROR = {"worse": "better", "better": "worse", "no change": "no change", "too few": "too few"}


def _side(runtime: str, metric: str, unit: str, values: list[list[float]]) -> list:
    """A runtime's samples of `metric`: one list of values per repetition (a pile-up's,
    one value per instance)."""
    from virtbench.store import Sample

    experiment = metric.split(".")[0]
    return [
        Sample(
            experiment=experiment,
            metric=metric,
            value=v,
            unit=unit,
            direction="lower",
            runtime=runtime,
            workload="sleep" if experiment == "density" else "hello",
            repetition=rep,
            background=i,  # a pile-up's instances: each a unit of its own
        )
        for rep, vs in enumerate(values)
        for i, v in enumerate(vs)
    ]


def _both_ways(a: list, b: list) -> tuple[list, list]:
    from virtbench.report.compare import compare as cmp

    ab = cmp([*a], [*b], with_runtime=False)
    ba = cmp([*b], [*a], with_runtime=False)
    return ab, ba


def test_a_quickstart_s_cgroup_memory_is_decided_the_same_both_ways():
    """crun's cgroup memory per instance sits at one charge batch (0.244 MiB, within the
    method's 0.25 MiB resolution), runc's at 0.67: runc,crun said "better" and crun,runc
    gave no verdict; now both decide on the difference, mirrored, with no ratio either way."""
    rng = np.random.default_rng(5)
    crun = [[0.244 + 0.004 * rng.random() for _ in range(30)]]
    runc = [[0.668 + 0.05 * rng.random() for _ in range(30)]]
    a = _side("runc", "density.cgroup_memory", "MiB", runc)
    b = _side("crun", "density.cgroup_memory", "MiB", crun)
    ab, ba = _both_ways(a, b)
    assert [r.verdict for r in ab] == ["better"] and [r.verdict for r in ba] == ["worse"]
    assert ab[0].reason and ba[0].reason  # no ratio either way: crun's is within resolution
    assert ab[0].diff[0] == pytest.approx(-ba[0].diff[0])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    metric=st.sampled_from(
        [("density.cgroup_memory", "MiB"), ("boot.spawn_to_exit", "ms"), ("density.pss", "MiB")]
    ),
    med_a=st.floats(0.0, 3.0),
    ratio=st.floats(0.0, 3.0),
    reps=st.tuples(st.integers(3, 8), st.integers(3, 8)),
    noise=st.floats(0.0, 0.2),
    seed=st.integers(0, 2**16),
)
def test_compare_of_b_and_a_is_the_mirror_of_a_and_b(metric, med_a, ratio, reps, noise, seed):
    """Injected pairs, one side within the method's resolution or not, close to the
    minimum effect or not: every verdict of compare(A, B) is the mirror of compare(B, A),
    and so are the tallies."""
    from virtbench.report.compare import counts

    rng = np.random.default_rng(seed)
    name, unit = metric

    def values(median: float, n: int) -> list[list[float]]:
        return [[max(0.0, median * (1 + noise * rng.standard_normal()))] for _ in range(n)]

    a = _side("ra", name, unit, values(med_a, reps[0]))
    b = _side("rb", name, unit, values(med_a * ratio, reps[1]))
    ab, ba = _both_ways(a, b)
    assert [MIRROR[r.verdict] for r in ab] == [r.verdict for r in ba]
    assert [bool(r.reason) for r in ab] == [bool(r.reason) for r in ba]
    n_ab, n_ba = counts(ab), counts(ba)
    assert (n_ab["worse"], n_ab["better"]) == (n_ba["better"], n_ba["worse"])


def test_the_measure_column_stays_readable_at_80_columns(tmp_path):
    """Two runs compared at 80 columns: the measure's name keeps 20 columns (not a word a
    line); the p column goes first, and the note under the table says so."""
    store = Store(tmp_path)
    fake_run(store, "runaa1", {"runc": 1.0, "crun": 1.0}, ("boot", "density"), seed=1)
    fake_run(store, "runbb2", {"runc": 1.1, "crun": 1.0}, ("boot", "density"), seed=2)
    argv = ["compare", "runaa1", "runbb2", "--results", str(tmp_path)]
    res = runner.invoke(app, argv, env={"COLUMNS": "80"})
    header = next(ln for ln in res.output.splitlines() if ln.startswith("┃ measure"))
    assert len(header.split("┃")[1]) >= 22, header  # 20 and its padding
    assert all(len(ln) <= 80 for ln in res.output.splitlines() if "│" in ln)
    assert "left out at this width: p (Holm), n" in " ".join(res.output.split())
