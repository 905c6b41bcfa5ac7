"""S1's experiments end to end on real runtimes: scalability (a worker measured as idle
instances pile up) and isolation (a worker next to misbehaving neighbours)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from tests.integration.conftest import cli, labelled, run_id_of

from virtbench.measure.topology import parse_cpulist
from virtbench.store import Store


def run_ok(tmp_path: Path, env: dict[str, str], spec: str) -> tuple[object, str]:
    """`virtbench run` of a spec file with this text; it must succeed: (result, run id)."""
    path = tmp_path / "spec.toml"
    path.write_text(spec)
    res = cli("run", str(path), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    return res, run_id_of(res.stdout)


def test_scalability_measures_boot_at_every_step(env, tmp_path):
    res = cli(
        "run",
        "scalability",
        "--runtimes",
        "native,crun",
        "--step",
        "2",
        "--max",
        "4",
        "--runs",
        "1",
        "--warmups",
        "1",
        env=env,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    assert f"run {rid} completed" in res.stdout
    assert "vs 0" in res.stdout and "mem avail" in res.stdout
    assert "slope per 100" in res.stdout and "verdict" in res.stdout  # the trend table
    samples = Store(tmp_path / "results").samples(rid)
    for rt in ("native", "crun"):
        mine = [s for s in samples if s.runtime == rt and s.experiment == "scalability"]
        boots = [s for s in mine if s.metric == "boot.spawn_to_exit"]
        # 5 boots at each point (measurements_per_point's default for the boot worker)
        assert sorted(s.background for s in boots if not s.warmup) == [0] * 5 + [2] * 5 + [4] * 5
        assert [s.background for s in boots if s.warmup] == [0]
        assert all(s.value and 0 < s.value < 5000 for s in boots), boots
        assert all(s.params["background_workload"] == "sleep" for s in boots)
        for metric in ("host.cpu_idle_pct", "host.mem_available_pct", "host.swap_free_pct"):
            points = [s for s in mine if s.metric == metric]
            assert sorted(s.background for s in points) == [0, 2, 4], metric
            assert all(0 <= s.value <= 100 for s in points), points
        launches = [s for s in mine if s.metric == "scalability.launch"]
        assert len(launches) == 4 and all(s.value and s.value > 0 for s in launches)
        (reached,) = [s for s in mine if s.metric == "scalability.reached"]
        assert reached.value == 4
        (teardown,) = [s for s in mine if s.metric == "scalability.teardown_per_instance"]
        assert teardown.value > 0
    assert labelled(rid) == []


def test_scalability_serving_worker_next_to_idle_servers(env, tmp_path):
    _, rid = run_ok(
        tmp_path,
        env,
        'name = "scal-redis"\nruntimes = ["crun"]\n[instance]\nnetwork = "bridge"\n'
        '[[experiment]]\ntype = "scalability"\nworker = "redis"\nbackground = "redis"\n'
        "instances_per_benchmark = 2\ninstances = 2\nruns = 1\nwarmups = 0\n"
        "[experiment.params.redis]\nrequests = 20000\n",
    )
    samples = Store(tmp_path / "results").samples(rid)
    gets = [s for s in samples if s.metric == "get.requests_per_s"]
    assert sorted(s.background for s in gets) == [0, 2], gets
    assert all(s.value and s.value > 1000 for s in gets), gets
    assert all(s.params["background_workload"] == "redis" for s in gets)
    assert all(s.params["requests"] == 20000 for s in gets)
    launches = [s for s in samples if s.metric == "scalability.launch"]
    assert len(launches) == 2 and all(s.value for s in launches), launches
    assert labelled(rid) == []


def test_scalability_memory_guard_stops_growth_and_says_why(env, tmp_path):
    _, rid = run_ok(
        tmp_path,
        env,
        'name = "guard"\nruntimes = ["crun"]\n[[experiment]]\ntype = "scalability"\n'
        "instances_per_benchmark = 2\ninstances = 4\nruns = 1\nwarmups = 0\n"
        "guard_available_mib = 16777216\n",  # 16 TiB: more than any host has
    )
    store = Store(tmp_path / "results")
    samples = store.samples(rid)
    (reached,) = [s for s in samples if s.metric == "scalability.reached"]
    assert reached.value == 0
    boots = [s for s in samples if s.metric == "boot.spawn_to_exit"]
    assert [s.background for s in boots] == [0] * 5  # alone, before the guard stopped it
    said = " ".join(message for _, _, message in store.events(rid))
    assert "stopped at 0 background instances (memory guard: MemAvailable" in said
    assert labelled(rid) == []


def test_scalability_refuses_idle_servers_sharing_the_host_port(env, tmp_path):
    path = tmp_path / "bg.toml"
    path.write_text(
        'name = "bg"\nruntimes = ["native"]\n[[experiment]]\ntype = "scalability"\n'
        'background = "nginx"\nbackground_network = "host"\ninstances = 2\n'
        "instances_per_benchmark = 1\n"
    )
    res = cli("run", str(path), env=env)
    assert res.returncode != 0
    said = " ".join((res.stdout + res.stderr).split())
    assert "native runs background instances on the host network" in said
    assert "bind port 18080" in said and 'background = "sleep"' in said
    store = Store(tmp_path / "results")
    assert not store.samples(store.runs()[0].id)


def test_isolation_cpu_attacker_on_the_worker_cpu_slows_it(env, tmp_path):
    res, rid = run_ok(
        tmp_path,
        env,
        'name = "iso"\nruntimes = ["native", "crun"]\n[instance]\nnetwork = "host"\n'
        '[[experiment]]\ntype = "isolation"\nworker = "sqlite"\n'
        'attackers = ["cpu"]\nplacements = ["same-cpu", "smt-sibling", "other-cpu"]\n'
        "runs = 3\nwarmups = 0\nsettle_s = 0.3\nci_target_pct = 0\n"
        "[experiment.params.sqlite]\nrows = 10000\n",
    )
    assert "slowdown" in res.stdout
    store = Store(tmp_path / "results")
    samples = [s for s in store.samples(rid) if s.experiment == "isolation"]
    assert samples and all(s.error == "" for s in samples), [s.error for s in samples]
    cpus = parse_cpulist(Path("/sys/devices/system/cpu/online").read_text())
    for rt in ("native", "crun"):
        rates = [s for s in samples if s.runtime == rt and s.metric == "inserts_per_s"]
        by = {}
        for s in rates:
            by.setdefault((s.attacker, s.placement), []).append(s)
        # (the fork attacker: on runsc, below; on native and crun under `long`, in
        # test_isolation_fork_attacker_on_native_and_crun)
        conditions = {("", ""), ("cpu", "same-cpu")}
        if len(cpus) > 1:
            conditions.add(("cpu", "other-cpu"))
        assert set(by) == conditions, sorted(by)  # this host has no SMT: sibling skipped
        assert all(len(v) == 3 for v in by.values())
        same = by[("cpu", "same-cpu")]
        assert all(s.params["attacker_cpus"] == s.params["cpus"] for s in same)
        baseline = statistics.median(s.value for s in by[("", "")])
        attacked = statistics.median(s.value for s in same)
        assert attacked < 0.8 * baseline, (rt, baseline, attacked)  # sharing one CPU ~halves it
    said = " ".join(message for _, _, message in store.events(rid))
    if "SMT sibling" not in said:  # a host with SMT measures the sibling too
        assert any(s.placement == "smt-sibling" for s in samples)
    assert labelled(rid) == []


@pytest.mark.long
def test_isolation_fork_attacker_on_native_and_crun(env, tmp_path):
    """The fork attacker beside native's and crun's worker, on its CPU and on another:
    every condition measured, no sample failed, nothing left."""
    _, rid = run_ok(
        tmp_path,
        env,
        'name = "iso-fork"\nruntimes = ["native", "crun"]\n[instance]\nnetwork = "host"\n'
        '[[experiment]]\ntype = "isolation"\nworker = "sqlite"\nattackers = ["fork"]\n'
        'placements = ["same-cpu", "other-cpu"]\nruns = 3\nwarmups = 0\nsettle_s = 0.3\n'
        "ci_target_pct = 0\n[experiment.params.sqlite]\nrows = 10000\n",
    )
    samples = [s for s in Store(tmp_path / "results").samples(rid) if s.experiment == "isolation"]
    assert samples and all(s.error == "" for s in samples), [s.error for s in samples]
    for rt in ("native", "crun"):
        rates = [s for s in samples if s.runtime == rt and s.metric == "inserts_per_s"]
        assert {s.attacker for s in rates} == {"", "fork"}, rt
    assert labelled(rid) == []


def test_isolation_runsc_fork_attacker_and_its_pids_limit(env, tmp_path):
    """gVisor's ptrace platform turns a guest fork loop into thousands of host threads:
    the default limit lets the attacker run (its peak is stored); a tiny one ends it, and
    the failure names attacker_pids_limit."""
    spec = (
        'name = "iso-fork"\nruntimes = ["runsc"]\n[instance]\nnetwork = "host"\n'
        '[[experiment]]\ntype = "isolation"\nworker = "sqlite"\nattackers = ["fork"]\n'
        'placements = ["same-cpu"]\nruns = 1\nwarmups = 0\nsettle_s = 1.0\n'
        "ci_target_pct = 0\n{limit}"
        "[experiment.params.sqlite]\nrows = 5000\n"
    )
    _, rid = run_ok(tmp_path, env, spec.format(limit=""))
    store = Store(tmp_path / "results")
    samples = [s for s in store.samples(rid) if s.attacker == "fork"]
    assert samples and all(s.error == "" for s in samples), [s.error for s in samples]
    peak = [s for s in samples if s.metric == "isolation.attacker_tasks_peak"]
    assert len(peak) == 1 and peak[0].value > 100, peak  # far more than the loop's 2
    limit = peak[0].params["attacker_pids_limit"]
    assert 64 <= limit <= 8192 and peak[0].value <= limit
    assert labelled(rid) == []

    _, rid = run_ok(tmp_path, env, spec.format(limit="attacker_pids_limit = 40\n"))
    failed = [s for s in store.samples(rid) if s.attacker == "fork" and s.error]
    assert failed, store.samples(rid)
    assert "pids limit of 40 host tasks refused" in failed[0].error
    assert "raise attacker_pids_limit" in failed[0].error
    assert labelled(rid) == []


def test_isolation_refuses_unknown_attacker_and_cpu(env, tmp_path):
    res = cli("run", "isolation", "--attackers", "cpu,bogus", env=env)
    assert res.returncode != 0
    said = " ".join((res.stdout + res.stderr).split())
    assert "bogus" in said and "cpu" in said and "memory" in said  # names the allowed ones
    spec = tmp_path / "cpu.toml"
    spec.write_text(
        'name = "iso-cpu"\nruntimes = ["native"]\n[[experiment]]\ntype = "isolation"\n'
        "worker_cpu = 4095\n"
    )
    res = cli("run", str(spec), env=env)
    assert res.returncode != 0
    said = " ".join((res.stdout + res.stderr).split())
    assert "worker_cpu 4095 is not an online CPU" in said
