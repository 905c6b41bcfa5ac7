"""`virtbench run` end to end on real runtimes, bad input, Ctrl-C, kill -9 and clean."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
from tests.integration.conftest import cli, labelled, run_cgroups, run_id_of, start_run

from virtbench.store import Store


@pytest.mark.slow
def test_boot_and_density_on_three_runtimes(env, tmp_path):
    env = {**env, "VIRTBENCH_MEMORY_SETTLE_S": "2"}  # the one run of the suite that settles
    res = cli(
        "run",
        "quickstart",
        "--runs",
        "2",
        "--warmups",
        "1",
        "--instances",
        "5",
        "--instances-per-benchmark",
        "2",
        env=env,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    rid = run_id_of(res.stdout)
    assert f"run {rid} completed" in res.stdout
    assert "median" in res.stdout and "95% CI" in res.stdout and "CV" in res.stdout
    store = Store(tmp_path / "results")
    run = store.run(rid)
    assert run.status == "completed"
    assert run.environment["runtimes"].keys() == {"native", "runc", "crun"}
    assert run.environment["kvm"] in ("none", "pvm", "nested", "hardware")
    assert run.artifacts[0]["disk_bytes"] > 0 and len(run.artifacts[0]["digest"]) == 64
    samples = [s for s in store.samples(rid) if not s.warmup]
    for rt in ("native", "runc", "crun"):
        exits = [s for s in samples if s.runtime == rt and s.metric == "boot.spawn_to_exit"]
        readies = [s for s in samples if s.runtime == rt and s.metric == "boot.spawn_to_ready"]
        assert len(exits) == 2 and len(readies) == 2, rt
        assert all(s.value and 0 < s.value < 10_000 and not s.error for s in exits + readies)
        # --runs applies to density too: two pile-ups of 5
        pss = [s for s in samples if s.runtime == rt and s.metric == "density.pss"]
        assert len(pss) == 10 and all(s.value > 0 for s in pss)
        assert [s.background for s in pss if s.repetition == 1] == [0, 1, 2, 3, 4]
        host = [s for s in samples if s.runtime == rt and s.metric == "density.host_used"]
        assert [s.background for s in host if s.repetition == 0] == [0, 2, 4, 5]
        assert all(s.value > 0 and s.params["caches_dropped"] for s in host)
        reached = [s.value for s in samples if s.runtime == rt and s.metric == "density.reached"]
        assert reached == [5.0, 5.0]
    measured = [s for s in samples if s.experiment != "image"]
    assert all(s.params["network"] in ("none", "host") for s in measured)
    images = {s.runtime: s for s in samples if s.experiment == "image"}
    assert images.keys() == {"native", "runc", "crun"}
    assert all(s.params["measured_by"] == "rootfs du" and s.value > 0 for s in images.values())
    names = {name for name, _, _ in store.series(rid)}
    assert {"host.cpu_idle_pct", "host.mem_available_pct", "host.swap_free_pct"} <= names
    assert not labelled(rid)
    listed = cli("list", env=env)
    assert rid in listed.stdout and "completed" in listed.stdout
    shown = cli("show", rid, "--wide", env=env)
    assert (
        shown.returncode == 0
        and "time to run and exit (hello)" in shown.stdout
        and "SD" in shown.stdout
    )


def test_bad_spec_is_one_line_and_starts_nothing(env, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nruntimes = ["crun"]\n[[experiment]]\ntype = "boot"\nrnus = 3\n')
    res = cli("run", str(bad), env=env)
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "experiment[0].rnus: unknown key" in lines[0] and str(bad) in lines[0]
    )
    res = cli("run", "boot", "--runtimes", "native,crunn", env=env)
    assert res.returncode != 0
    assert res.stderr.strip().count("\n") == 0 and "unknown runtime 'crunn'" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert not (tmp_path / "state" / "runs").exists() or not list(
        (tmp_path / "state" / "runs").iterdir()
    )
    assert not (tmp_path / "results").exists()


def start_density(env, instances: int) -> tuple[subprocess.Popen, str]:
    p, rid = start_run("density", "--runtimes", "crun", "--instances", str(instances), env=env)
    deadline = time.monotonic() + 150
    while len(run_cgroups(rid)) < 5:  # the pile-up under way
        if time.monotonic() > deadline:  # stop it: a run left going would load later tests
            p.send_signal(signal.SIGINT)
            p.communicate(timeout=300)
            raise AssertionError("instances did not start")
        assert p.poll() is None, p.stdout.read()
        time.sleep(0.1)
    return p, rid


@pytest.mark.slow
def test_ctrl_c_stops_everything_and_marks_interrupted(env, tmp_path):
    p, rid = start_density(env, 400)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 130, out
    assert "interrupted" in out
    assert not labelled(rid)
    assert Store(tmp_path / "results").run(rid).status == "interrupted"
    assert not (tmp_path / "state" / "runs" / rid).exists()


@pytest.mark.slow
def test_kill_9_then_clean_leaves_nothing(env, tmp_path):
    p, rid = start_density(env, 400)
    p.kill()
    p.communicate(timeout=30)
    left = labelled(rid)
    assert left, "the run should have left instances behind"
    # crun's containers each have an overlay root mounted (rootfs = "overlay")
    assert any(x.startswith("mount ") and "/rootfs/" in x for x in left), left
    dry = cli("clean", "--dry-run", "--run", rid, env=env)
    assert dry.returncode == 0 and "would remove instance" in dry.stdout
    assert labelled(rid)
    res = cli("clean", "--run", rid, env=env)
    assert res.returncode == 0, res.stderr
    assert f"run {rid} marked crashed" in res.stdout
    assert not labelled(rid)
    assert not (tmp_path / "state" / "runs" / rid).exists()
    assert cli("clean", "--run", rid, env=env).stdout.strip() == "nothing to clean"


@pytest.mark.slow
def test_bridge_network_run(env, tmp_path):
    spec = tmp_path / "bridge.toml"
    spec.write_text(
        'name = "bridged"\nruntimes = ["runc", "crun"]\n[instance]\nnetwork = "bridge"\n'
        '[[experiment]]\ntype = "boot"\nworkloads = ["sleep"]\nruns = 3\nwarmups = 0\n'
    )
    res = cli("run", str(spec), env=env)
    assert res.returncode == 0, res.stderr + res.stdout
    rid = run_id_of(res.stdout)
    samples = Store(tmp_path / "results").samples(rid)
    ready = [s for s in samples if s.metric == "boot.spawn_to_ready"]
    assert len(ready) == 6 and all(s.value and s.params["network"] == "bridge" for s in ready)
    assert not labelled(rid)


def test_memory_guard_stops_growth_and_says_why(env, tmp_path):
    spec = tmp_path / "guard.toml"
    spec.write_text(
        'name = "guard"\nruntimes = ["crun"]\n[[experiment]]\ntype = "density"\n'
        "instances = 5\nguard_available_mib = 100000000\n"
    )
    res = cli("run", str(spec), env=env)
    assert res.returncode == 0, res.stderr + res.stdout
    rid = run_id_of(res.stdout)
    store = Store(tmp_path / "results")
    reached = [s.value for s in store.samples(rid) if s.metric == "density.reached"]
    assert reached == [0.0]
    events = [m for _, _, m in store.events(rid)]
    assert any("memory guard" in m and "after 0 instances" in m for m in events), events
    assert not labelled(rid)


def test_adaptive_repetition_and_report_of_a_real_run(env, tmp_path):
    """--target-cv repeats past --runs (up to --max-runs) and says when it stopped; the
    run then exports and reports like any other."""
    res = cli(
        "run",
        "boot",
        "--runtimes",
        "native,crun",
        "--workloads",
        "hello",
        "--runs",
        "3",
        "--warmups",
        "1",
        "--target-cv",
        "0.01",
        "--max-runs",
        "5",
        env=env,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    store = Store(tmp_path / "results")
    boots = [s for s in store.samples(rid) if s.metric == "boot.spawn_to_exit" and not s.warmup]
    assert sorted({s.repetition for s in boots}) == [0, 1, 2, 3, 4]  # 0.01% is never met
    said = " ".join(m for _, _, m in store.events(rid))
    assert "5 repetitions (max_runs)" in said and "target 0.01%" in said
    report = tmp_path / "r.html"
    res = cli("report", rid, "-o", str(report), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    page = report.read_text()
    assert "5 repetitions (max_runs)" in page
    # hello exits by itself (no teardown sample): every sample of time to run and exit,
    # and the startup medians; both runtimes keep the same rootfs on disk, a fact in
    # words, not a plot
    assert page.count("<svg") == 2 and f"{rid}-boot-boot-spawn-to-exit" in page
    assert f"{rid}-startup-medians" in page and f"{rid}-image-sizes" not in page
    facts = page[page.index("The same for every runtime") :]
    assert "image size on disk: " in facts[: facts.index("</ul>")]
    res = cli("export", rid, "--format", "csv", env=env)
    assert res.returncode == 0 and res.stdout.count("\n") == len(store.samples(rid)) + 1
