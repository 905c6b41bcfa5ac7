"""A study by its name on real runtimes: S4's quick form (its syscall payload sweep, page
faults, fio, redis and memcached over connections) runs here, skips the VM the host cannot
boot Linux in with the reason, and its report draws the study's figures."""

from __future__ import annotations

from tests.integration.conftest import cli, labelled, run_id_of

from virtbench.store import Store


def test_s4_quick_runs_here_and_its_report_draws_its_figures(env, tmp_path):
    res = cli("run", "s4-ukl", "--quick", "--runs", "1", env=env)  # each figure once
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    assert f"run {rid} completed" in res.stdout
    store = Store(tmp_path / "results")
    samples = [s for s in store.samples(rid) if not s.warmup]
    assert not [s.error for s in samples if s.error]
    names = {s.metric.partition("@")[0] for s in samples if s.runtime == "native"}
    for size in (1, 256, 1024, 4096, 8192):  # the quick form's payloads
        assert f"read_{size}b_ns" in names and f"sendto_recvfrom_{size}b_ns" in names
    assert {"p99_us", "ops_per_s", "randrw.read.iops"} <= names, sorted(names)
    levels = {s.params.get("level") for s in samples if s.metric.startswith("p99_us")}
    assert levels == {1, 16, 128}  # memcached's connection sweep
    env_ = store.run(rid).environment
    assert env_["mitigations"]["setting"] and "smt_control" in env_
    events = [m for _, _, m in store.events(rid)]
    if "qemu" not in {s.runtime for s in samples}:  # this host's KVM cannot boot Linux
        assert any(m.startswith("skipped: qemu skips throughput") for m in events), events
    out = tmp_path / "s4.html"
    rep = cli("report", rid, "-o", str(out), env=env)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    plots = {p.stem for p in (tmp_path / "s4-plots" / rid).glob("*.svg")}
    assert {"syscall-payload", "medians-memcached-ops_per_s"} <= plots, plots
    assert any(p.startswith("concurrency-memcached-p99_us") for p in plots), plots
    assert labelled(rid) == []
