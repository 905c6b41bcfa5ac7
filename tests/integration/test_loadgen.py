"""The clients on a load-generator host of their own (`virtbench run --loadgen HOST`): the
load generator is a network namespace with its own sshd (as the fleet tests' hosts), the
host under test this machine. One run, one store: a native nginx reached on this host's
address (host network), crun's servers on the run's bridge reached through a route the
run gives the load generator, the static vb-mcload copied there; nothing of the run left
on either side."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import need
from tests.integration import fleethosts
from tests.integration.conftest import (
    clean_crashed,
    cli,
    labelled,
    run_id_of,
    start_run,
)

from virtbench.loadgen.remote import clients_dir
from virtbench.store import Store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]


@pytest.fixture(scope="module")
def hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[fleethosts.Hosts]:
    why = fleethosts.available()
    need(why is None, str(why))
    h = fleethosts.Hosts(tmp_path_factory.mktemp("loadgen"), 1, cpus={"h1": "1"})
    try:
        yield h.start()
    finally:
        h.close()


def loadgen_flags(h: fleethosts.Hosts) -> list[str]:
    """`--loadgen` and its ssh options, as a user would give them."""
    options = (
        f"IdentityFile={h.key}",
        "StrictHostKeyChecking=no",
        "UserKnownHostsFile=/dev/null",
        "LogLevel=ERROR",
    )
    return ["--loadgen", f"root@{h.addr('h1')}", *(f"--ssh-option={o}" for o in options)]


SPEC = """
name = "remote"
runtimes = ["native", "crun"]
[instance]
network = "bridge"
cpus = "0"              # the host under test's CPU; the load generator's is CPU 1
[runtime.native]
network = "host"

[[experiment]]
type = "throughput"
workloads = ["nginx", "redis", "memcached"]
runs = 1
[experiment.params.nginx]
connections = 4
threads = 1
duration_s = 2
[experiment.params.redis]
requests = 20000
[experiment.params.memcached]
duration_s = 2
"""
# nginx alone, one run of `duration_s` seconds
NGINX = SPEC.split("[experiment.params.redis]")[0].replace(
    '"nginx", "redis", "memcached"', '"nginx"'
)


def nginx(duration_s: int) -> str:
    return NGINX.replace("duration_s = 2", f"duration_s = {duration_s}")


def routes(h: fleethosts.Hosts) -> str:
    return subprocess.run(
        ["ip", "-n", h.ns("h1"), "route"], capture_output=True, text=True, check=True
    ).stdout


def test_clients_on_a_load_generator_one_run_one_store_nothing_left(hosts, tmp_path: Path):
    spec = tmp_path / "remote.toml"
    spec.write_text(SPEC)
    env = {"VIRTBENCH_STATE_DIR": str(tmp_path / "state")}
    results = ["--results", str(tmp_path / "results")]
    res = cli("run", str(spec), *results, *loadgen_flags(hosts), env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [s for s in Store(tmp_path / "results").samples(rid) if s.experiment == "throughput"]
    assert samples and not [s.error for s in samples if s.error]
    where = {s.runtime: (s.params["client_host"], s.params["client_path"]) for s in samples}
    lg = f"root@{hosts.addr('h1')}"
    assert where == {"native": (lg, "host network"), "crun": (lg, "routed bridge")}, where
    for rt in ("native", "crun"):
        for metric in ("requests_per_s", "ops_per_s"):
            got = [s.value for s in samples if s.runtime == rt and s.metric.startswith(metric)]
            assert got and all(v and v > 0 for v in got), (rt, metric, got)
    assert all(s.params["loadgen_cpus"] == "1" for s in samples)  # its sshd's affinity
    clients = [s for s in samples if s.metric.startswith(("requests", "get.", "ops"))]
    assert {s.params["role"] for s in clients} == {"loadgen"}  # the client measured these
    assert {s.params["role"] for s in samples if s.metric.startswith("resources.")} == {"sut"}
    assert all(0 <= s.params["client_cpu_pct"] <= 100 for s in samples)
    env = Store(tmp_path / "results").run(rid).environment
    lg = env["loadgen"]
    assert lg["this_host_there"] == hosts.gateway and lg["facts"]["cpu_count"] >= 2
    assert lg["round_trip_us"]["rtt_avg"] > 0 and lg["link"]["mbit_s"] > 0, lg
    assert env["testbed"] and len(env["testbed"]) == 12
    assert "client on the load generator root@" in " ".join(res.stdout.split())
    assert labelled(rid) == []
    assert " via " not in routes(hosts)  # the route the run gave it is gone
    assert not Path(clients_dir(rid)).exists()  # (the namespace shares this machine's files)
    assert not list(Path("/run/virtbench/ssh").glob(f"{rid}*"))


def spinner(h: fleethosts.Hosts) -> subprocess.Popen[bytes]:
    """Another load on the load generator's only CPU: its client gets a share of it."""
    inside = ["nsenter", f"--net=/run/netns/{h.ns('h1')}"]
    return subprocess.Popen(
        ["taskset", "-c", h.cpus["h1"], *inside, "sh", "-c", "while :; do :; done"]
    )


def test_a_saturated_load_generator_is_flagged(hosts, tmp_path: Path):
    """The load generator's CPU shared with a spinner: every trial's samples say its CPUs
    were busy past 90%, and the run warns that those figures measured the client."""
    spec = tmp_path / "busy.toml"
    spec.write_text(nginx(2))
    spin = spinner(hosts)
    try:
        res = cli(
            "run",
            str(spec),
            "--runtimes",
            "native",
            "--results",
            str(tmp_path / "results"),
            *loadgen_flags(hosts),
            env={"VIRTBENCH_STATE_DIR": str(tmp_path / "state")},
        )
    finally:
        spin.kill()
        spin.wait(30)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = Store(tmp_path / "results").samples(rid)
    trials = [s for s in samples if s.experiment == "throughput"]
    assert trials and all(s.params["client_saturated"] for s in trials), [
        s.params.get("client_cpu_pct") for s in trials
    ]
    assert "that figure measured the client" in " ".join(res.stdout.split())


def test_killed_mid_trial_then_clean_removes_what_it_left_on_the_load_generator(
    hosts, tmp_path: Path
):
    """SIGKILL while a crun server on the bridge is driven from the load generator: its
    route and directory there and its ssh connection outlive it; `virtbench clean` asks
    the load generator and removes them, and nothing of the run is left on either side."""
    spec = tmp_path / "long.toml"
    spec.write_text(nginx(60))
    env = {"VIRTBENCH_STATE_DIR": str(tmp_path / "state")}
    env["VIRTBENCH_RESULTS"] = str(tmp_path / "results")
    args = (str(spec), "--runtimes", "crun")
    p, rid = start_run(*args, *loadgen_flags(hosts), env=env)
    try:
        deadline = time.monotonic() + 300
        while " via " not in routes(hosts):  # its server is up and routed to
            assert p.poll() is None and time.monotonic() < deadline, (
                p.stdout.read() if p.stdout else ""
            )
            time.sleep(0.2)
    finally:
        p.kill()
        p.communicate(timeout=60)  # its output read, and its pipe closed
    assert Path(clients_dir(rid)).exists()
    listed = cli("clean", "--run", rid, "--dry-run", env=env)
    assert f"remote    root@{hosts.addr('h1')}" in listed.stdout, listed.stdout + listed.stderr
    clean_crashed(rid, env)
    assert " via " not in routes(hosts) and not Path(clients_dir(rid)).exists()
    assert not list(Path("/run/virtbench/ssh").glob(f"{rid}*"))


def test_the_load_generator_lost_mid_trial_is_a_failed_sample_and_clean_finishes(
    hosts, tmp_path: Path
):
    """The load generator dies mid-trial (its sshd and every session killed): the trial is
    a failed sample naming the loss, the run ends saying it measured nothing, nothing of
    it is left here; what it made there waits in its ledger, and once the load generator
    answers again `virtbench clean` removes it. (Last: it restarts the host's sshd.)"""
    spec = tmp_path / "lost.toml"
    spec.write_text(nginx(60))
    env = {"VIRTBENCH_STATE_DIR": str(tmp_path / "state")}
    env["VIRTBENCH_RESULTS"] = str(tmp_path / "results")
    p, rid = start_run(str(spec), "--runtimes", "crun", *loadgen_flags(hosts), env=env)
    try:
        deadline = time.monotonic() + 300
        while " via " not in routes(hosts):
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(1)  # its client started there
        hosts.kill("h1")
        out, _ = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate(timeout=60)
    assert p.returncode == 1, out
    said = " ".join(out.split())
    assert f"load generator root@{hosts.addr('h1')} lost" in said, said
    failed = [s for s in Store(tmp_path / "results").samples(rid) if s.error]
    assert failed and all("lost" in s.error for s in failed), [s.error for s in failed]
    assert labelled(rid) == []
    hosts.start_sshd("h1")
    listed = cli("clean", "--run", rid, "--dry-run", env=env)
    assert f"remote    root@{hosts.addr('h1')}" in listed.stdout, listed.stdout + listed.stderr
    res = cli("clean", "--run", rid, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert " via " not in routes(hosts) and not Path(clients_dir(rid)).exists()
