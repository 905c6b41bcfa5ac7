"""The load generator's side, without a second host: its CPU counters read around a client
command and taken out of the client's output (loadgen/cpu.py), recovered from injected
counters and from a real command on this host."""

from __future__ import annotations

import subprocess

import pytest

from virtbench.loadgen import Clients, cpu


def counters(busy: int, idle: int, n: int = 2) -> str:
    """/proc/stat's cpuN lines as the wrapper marks them: each CPU `busy` jiffies of user
    time and `idle` of idle."""
    return "".join(f"{cpu.MARK}cpu{i} {busy} 0 0 {idle} 0 0 0 0 0 0\n" for i in range(n))


def test_injected_counters_give_the_busy_share_of_the_allowed_cpus():
    before = f"{cpu.MARK}allowed 1\n" + counters(100, 100)
    after = f"{cpu.MARK}allowed 1\n" + counters(195, 105)  # CPU 1: 95 of 100 jiffies busy
    own, busy = cpu.split(before + "wrk: a warning\n" + after)
    assert own == "wrk: a warning\n"
    assert busy is not None and busy.pct == pytest.approx(95.0) and busy.saturated
    assert busy.params() == {"client_cpu_pct": 95.0, "client_saturated": True}
    _, half = cpu.split(before + f"{cpu.MARK}allowed 1\n" + counters(150, 150))
    assert half is not None and half.pct == pytest.approx(50.0) and not half.saturated
    assert cpu.split(before + "killed\n") == ("killed\n", None)  # one read only: no figure


def wrapped(argv: list[str], cpus: str = "0") -> subprocess.CompletedProcess[str]:
    """A command under the wrapper, as the load generator's shell runs it."""
    script = ["taskset", "-c", cpus, "sh", "-c", cpu.WRAPPER, "sh", *argv]
    return subprocess.run(script, capture_output=True, text=True, timeout=60)


def test_the_wrapper_keeps_the_clients_output_and_status_and_reads_its_cpus():
    res = wrapped(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert res.returncode == 3 and res.stdout == "out\n"
    own, busy = cpu.split(res.stderr)
    assert own == "err\n" and busy is not None and busy.cpus == "0"
    assert 0.0 <= busy.pct <= 100.0


def test_a_client_that_spins_on_its_only_cpu_is_flagged_saturated():
    # a shell loop that starts nothing: a loop that ran `date` each turn waited on the
    # disk for it on a loaded host, and its CPU was idle (iowait) a tenth of the time
    res = wrapped(["timeout", "2", "sh", "-c", "while :; do :; done"])
    _, busy = cpu.split(res.stderr)
    assert busy is not None and busy.saturated, busy


def test_loadgen_flags_are_checked_before_anything_starts(tmp_path):
    """--ssh-option needs --loadgen, --resume keeps the run's own, and a destination ssh
    would not take is refused with the field named; a good one lands in the spec."""
    from typer.testing import CliRunner

    from virtbench.cli import app
    from virtbench.cli.run import resolve_spec

    def run(*args: str) -> str:
        res = CliRunner().invoke(app, ["run", *args], env={"COLUMNS": "200"})
        assert res.exit_code == 2, res.output
        return " ".join(res.output.split())

    assert "--ssh-option is for --loadgen HOST" in run("quickstart", "--ssh-option", "Port=2")
    assert "drop --loadgen" in run("--resume", "latest", "--loadgen", "lg1")
    said = run("quickstart", "--plan", "--loadgen", "lg1; rm -rf /")
    assert "loadgen.host" in said, said
    lg = {"host": "root@lg1", "ssh_options": ["IdentityFile=/k"]}
    spec = resolve_spec("quickstart", None, {}, loadgen=lg)
    assert spec.loadgen is not None and spec.loadgen.host == "root@lg1"
    assert spec.loadgen.ssh_options == ["IdentityFile=/k"]


class Delayed(Clients):
    """Clients whose every command first waits `delay_s` (a slow connection, a remote
    shell's start: the orchestration around a trial), then reports `p50_us` as vb-rr's
    client prints it: the injected truth."""

    where = "delayed"

    def __init__(self, delay_s: float, p50_us: float) -> None:
        self.delay_s, self.p50_us = delay_s, p50_us

    def run(self, argv, artifact, timeout, cpus=None):
        import time

        from virtbench.host import proc

        time.sleep(self.delay_s)
        line = f"rr proto=tcp size=64 count=100 lost=0 p50_us={self.p50_us} avg_us=130.0\n"
        return proc.Result(tuple(argv), 0, line, "", self.delay_s)


def test_an_orchestration_delay_around_a_trial_does_not_enter_its_figure(tmp_path):
    """On the fake runtime, a worker's trials through clients that take 0 s or 0.3 s
    before each command record the client's own figure, the injected 123 us, either way:
    the time around a client command (ssh, a shell) is never part of what it measured."""
    import time

    from tests.fakeruntime import fake_session
    from tests.faketruth import RuntimeTruth, Truth

    from virtbench.experiments.worker import Job, Worker
    from virtbench.workloads import latency, sleep

    truth = Truth({"fa": RuntimeTruth()}, seed=1)
    params = latency.Params(tests=["tcp"], sizes=[64], count=100)
    took = {}
    for delay in (0.0, 0.3):
        with fake_session(tmp_path / str(delay), truth, ["fa"], {"type": "boot"}) as (s, _):
            s.clients = Delayed(delay, 123.0)
            w = Worker(s, "fa", Job("latency", params, 10, 60))
            w.inst = s.runtimes["fa"].start(w._spec(sleep.argv), detach=True)
            w.address = "127.0.0.1"
            t0 = time.monotonic()
            w.measure_levels("throughput", quiet=False, repetition=0)
            took[delay] = time.monotonic() - t0
            w.stop()
            got = [x for x in s.store.samples(s.run_id) if x.metric == "tcp.64B.rtt_p50"]
        assert [x.value for x in got] == [123.0], (delay, got)
    assert took[0.3] - took[0.0] >= 0.25  # the delay was there, outside the figure


def test_a_client_here_has_its_pinned_cpus_read_around_it():
    """On the host under test the client is pinned (taskset) and its CPUs' counters are
    read around it: a client spinning on its one CPU is flagged, as on a load generator."""
    from pathlib import Path

    here = Clients()
    spin = "end=$(($(date +%s) + 2)); while [ $(date +%s) -lt $end ]; do :; done"
    res = here.run(["sh", "-c", spin], Path("/nonexistent"), 30, cpus="0")
    assert res.returncode == 0
    trial = here.trial()
    assert trial["client_saturated"] and trial["client_cpu_pct"] > 90, trial
    assert Clients().trial() == {}  # nothing run: nothing said
