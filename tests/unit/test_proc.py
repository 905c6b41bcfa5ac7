import gc
import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from virtbench.errors import InstanceError
from virtbench.host import cgroups, proc
from virtbench.measure import quiet
from virtbench.runtimes.controls import CommandExec


def test_run_captures_and_checks():
    res = proc.run(["sh", "-c", "echo out; echo err >&2"])
    assert res.stdout.strip() == "out" and res.stderr.strip() == "err"
    with pytest.raises(proc.CommandError, match="sh failed: nope"):
        proc.run(["sh", "-c", "echo nope >&2; exit 3"])
    assert proc.run(["sh", "-c", "exit 3"], check=False).returncode == 3


def test_timeout_kills_the_whole_group():
    t0 = time.monotonic()
    with pytest.raises(proc.CommandError, match="timed out"):
        proc.run(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    assert time.monotonic() - t0 < 10


def test_missing_command_is_one_line():
    with pytest.raises(proc.VirtbenchError, match="no-such-binary-xyz: command not found"):
        proc.run(["no-such-binary-xyz"])


def test_wait_wakes_at_exit_not_on_a_poll_tick(monkeypatch):
    """Popen.wait(timeout)'s back-off notices a 50 ms child at ~64 ms; the wait here sleeps
    once, on the child's pidfd, for the whole timeout, and wakes when the kernel says the
    child ended (what it costs on a quiet host: bench/boot_vs_hyperfine.py)."""
    polls: list[tuple[int, int]] = []
    real_poll = select.poll

    class Counted:
        def __init__(self) -> None:
            self.inner = real_poll()
            self.fds: list[int] = []

        def register(self, fd: int, mask: int) -> None:
            self.fds.append(fd)
            self.inner.register(fd, mask)

        def poll(self, ms: int) -> list:
            polls.append((len(self.fds), ms))
            return self.inner.poll(ms)

    monkeypatch.setattr(select, "poll", Counted)
    p = proc.spawn(["sleep", "0.05"])
    assert proc.wait(p, 5) == 0
    assert polls == [(1, 5000)], polls  # one sleep on one fd (the pidfd), no back-off ticks
    monkeypatch.undo()
    p = proc.spawn(["sleep", "5"])
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(p, 0.1)
    proc.stop(p)
    assert p.poll() is not None


def test_signal_pid_reaches_only_the_process_that_still_is_who_the_check_says():
    p = subprocess.Popen(["sleep", "30"])
    try:
        assert not proc.signal_pid(p.pid, signal.SIGKILL, lambda _pid: False)
        assert p.poll() is None  # the check said "not it": untouched
        assert proc.signal_pid(p.pid, signal.SIGKILL, lambda pid: pid == p.pid)
        assert p.wait(10) == -signal.SIGKILL
        # reaped: the pid names nothing now (or another process), and nothing is signalled
        assert not proc.signal_pid(p.pid, signal.SIGKILL, lambda _pid: False)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_signal_group_reaches_every_member_of_the_group_and_no_one_else():
    group = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"], start_new_session=True)
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len([c for c in psutil.Process(group.pid).children() if c.name() == "sleep"]) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert proc.signal_group(group.pid, signal.SIGKILL) == 3
        assert group.wait(10) == -signal.SIGKILL
        assert other.poll() is None
    finally:
        for p in (group, other):
            if p.poll() is None:
                p.kill()
                p.wait()


def gone(pid: int, within: float = 30.0) -> bool:
    """Whether process `pid` has ended (exited, or a zombie no one reaped yet) within
    `within` seconds: a pidfd becomes readable at its end."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(int(within * 1000)))
    finally:
        os.close(fd)


# The command starts a grandchild (sleep 300) in its group and writes its pid to a file;
# it then waits for it, or exits at once while the grandchild holds its pipes open.
BACKGROUND = {
    "waits": "sleep 300 & echo $! > {f}; wait",
    "leaves": "sleep 300 & echo $! > {f}",
}


@pytest.mark.parametrize("how", sorted(BACKGROUND))
@pytest.mark.parametrize("runner", [proc.run, proc.run_bytes], ids=["run", "run_bytes"])
def test_a_timed_out_command_is_killed_with_its_whole_group_and_waited_for(runner, how, tmp_path):
    pidfile = tmp_path / "pid"
    t0 = time.monotonic()
    with pytest.raises(proc.CommandTimeout, match="timed out after 2 s"):
        runner(["sh", "-c", BACKGROUND[how].format(f=pidfile)], timeout=2)
    assert time.monotonic() - t0 < 120  # not the grandchild's 300 s
    assert gone(int(pidfile.read_text()))
    gc.collect()  # a Popen left running or with open pipes would warn here (an error)


def wait_for_file(path: Path, then: threading.Event) -> None:
    deadline = time.monotonic() + 60
    while not (path.exists() and path.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.01)
    then.set()


class Interrupted(Exception):
    pass


@pytest.mark.parametrize("runner", [proc.run, proc.run_bytes], ids=["run", "run_bytes"])
def test_an_interrupted_wait_kills_the_whole_group_and_closes_its_pipes(runner, tmp_path):
    pidfile = tmp_path / "pid"
    started = threading.Event()

    def interrupt() -> None:  # once the grandchild is there, a signal to the waiting thread
        wait_for_file(pidfile, started)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)

    def handler(signum, frame):
        raise Interrupted

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(Interrupted):
            runner(["sh", "-c", BACKGROUND["waits"].format(f=pidfile)], timeout=120)
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert started.is_set()
    assert gone(int(pidfile.read_text()))
    gc.collect()


@pytest.mark.parametrize("runner", [proc.run, proc.run_bytes], ids=["run", "run_bytes"])
def test_an_interruption_while_popen_still_starts_the_child_ends_its_group(
    runner, tmp_path, monkeypatch
):
    """A Ctrl-C can land once the child runs but before Popen has returned it (its wait
    for the exec): the group is ended all the same, not left running unowned."""
    pidfile = tmp_path / "pid"
    start = subprocess.Popen._execute_child

    def interrupted(self, *args, **kwargs):  # the interruption, once the grandchild is there
        start(self, *args, **kwargs)
        wait_for_file(pidfile, threading.Event())
        raise Interrupted

    monkeypatch.setattr(subprocess.Popen, "_execute_child", interrupted)
    with pytest.raises(Interrupted):
        runner(["sh", "-c", BACKGROUND["waits"].format(f=pidfile)], timeout=120)
    monkeypatch.undo()
    assert gone(int(pidfile.read_text()))
    gc.collect()  # a Popen left running or with open pipes would warn here (an error)


def test_run_bytes_reads_every_byte_times_it_and_returns_the_status():
    out = proc.run_bytes(["head", "-c", str(1 << 20), "/dev/zero"])
    assert (out.returncode, len(out.stdout), out.stderr) == (0, 1 << 20, b"")
    assert 0 < out.t0_ns < out.t1_ns
    out = proc.run_bytes(["sh", "-c", "printf oops >&2; printf é; exit 3"])
    assert (out.returncode, out.stdout, out.stderr) == (3, "é".encode(), b"oops")
    with pytest.raises(proc.VirtbenchError, match="no-such-binary-xyz: command not found"):
        proc.run_bytes(["no-such-binary-xyz"])


class HostExec(CommandExec):
    """An exec that runs its command on this host."""

    def argv(self, inst, argv):
        return argv


def test_a_command_exec_counts_the_bytes_and_ends_its_group_at_its_timeout(tmp_path):
    ex = HostExec(SimpleNamespace(label="host"))
    res = ex.run(None, ["head", "-c", str(1 << 20), "/dev/zero"], 60)
    assert (res.status, res.stdout_bytes) == (0, 1 << 20) and res.t_start_ns < res.t_end_ns
    res = ex.run(None, ["sh", "-c", "echo why >&2; exit 2"], 60)
    assert (res.status, res.stdout_bytes, res.stderr) == (2, 0, "why\n")
    pidfile = tmp_path / "pid"
    argv = ["sh", "-c", BACKGROUND["waits"].format(f=pidfile)]
    with pytest.raises(InstanceError, match=r"^host: sh -c \.\.\. did not end in 2 s$"):
        ex.run(None, argv, 2)
    assert gone(int(pidfile.read_text()))
    gc.collect()


def test_the_quiet_sentinel_has_its_own_group_and_is_ended_and_waited_for(tmp_path, monkeypatch):
    spawned = []
    spawn = proc.spawn

    def record(*a, **k):
        spawned.append(spawn(*a, **k))
        return spawned[-1]

    monkeypatch.setattr(proc, "spawn", record)
    monkeypatch.setattr(quiet.cgroups, "kill_and_remove", lambda d: True)  # no real cgroups
    layout = cgroups.Layout(2, {}, tmp_path)  # its "cgroups": directories here
    primer = quiet.Primer(layout, lambda s: f"t-{s}", lambda cg: None)
    p = spawned[-1]
    assert os.getpgid(p.pid) == p.pid  # its own group, in virtbench's session
    primer.prime()
    primer.close()
    assert p.returncode is not None
    monkeypatch.setattr(quiet.Primer, "prime", lambda self: 1 / 0)  # it fails as it starts
    with pytest.raises(ZeroDivisionError):
        quiet.Primer(layout, lambda s: f"u-{s}", lambda cg: None)
    assert spawned[-1] is not p and spawned[-1].returncode is not None  # not left running
    gc.collect()


def test_spawn_to_files_is_a_posix_spawn_popen_with_popens_child_set_up(tmp_path):
    # stdout to a file, stdin /dev/null, a group of its own, SIGPIPE back to default (Python
    # ignores it), only 0, 1 and 2 open, the environment given and its PATH searched
    out = tmp_path / "out"
    script = (
        'read -r line || echo "stdin: eof"; ps -o pgid= -p $$; '
        'grep ^SigIgn /proc/$$/status; ls /proc/$$/fd; echo "$VB_X"'
    )
    with open(out, "wb") as fh:
        p = proc.spawn(["sh", "-c", script], stdout=fh.fileno(), env={"PATH": "/bin", "VB_X": "y"})
    assert isinstance(p, proc.Spawned) and isinstance(p, subprocess.Popen)
    assert proc.wait(p, 10) == 0 and p.returncode == 0 and p.poll() == 0
    lines = out.read_text().split()
    assert lines[:2] == ["stdin:", "eof"] and int(lines[2]) == p.pid
    sig_ign = int(lines[4], 16)
    assert not sig_ign & (1 << (signal.SIGPIPE - 1)) and not sig_ign & (1 << (signal.SIGXFSZ - 1))
    assert lines[5:] == ["0", "1", "2", "y"]


def test_a_spawned_child_is_waited_signalled_and_reaped_as_popens():
    p = proc.spawn(["sleep", "30"])
    assert p.poll() is None and p.returncode is None
    with pytest.raises(subprocess.TimeoutExpired):
        p.wait(timeout=0.05)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=10) == -signal.SIGTERM and p.poll() == -signal.SIGTERM
    p.kill()  # gone and reaped: nothing happens, as with Popen
    assert "sleep" in repr(p)
    with pytest.raises(proc.VirtbenchError, match="no-such-binary-xyz: command not found"):
        proc.spawn(["no-such-binary-xyz"])
    with pytest.raises(proc.VirtbenchError, match="command not found"):
        proc.spawn(["/no/such/binary"])


def started(script: str, pidfile: Path) -> subprocess.Popen:
    """`script` spawned in a group of its own, once its background child wrote its pid."""
    p = proc.spawn(["sh", "-c", script])
    deadline = time.monotonic() + 30
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.01)
    return p


def test_stop_terms_the_group_then_kills_what_ignores_it(tmp_path):
    pidfile = tmp_path / "pid"
    p = started(f"sleep 300 & echo $! > {pidfile}; wait", pidfile)
    assert proc.stop(p, 10) == -signal.SIGTERM  # TERM to the group: the shell's and sleep's
    assert gone(int(pidfile.read_text()), 10)
    pidfile.unlink()
    p = started(f"trap '' TERM; sleep 300 & echo $! > {pidfile}; wait", pidfile)
    t0 = time.monotonic()
    assert proc.stop(p, 0.2) == -signal.SIGKILL  # TERM ignored (by sleep too): KILL
    assert time.monotonic() - t0 < 10 and gone(int(pidfile.read_text()), 10)
    assert proc.stop(p) == -signal.SIGKILL and not proc.signal_child(p, signal.SIGTERM)


def test_stop_terms_the_leader_alone_first_and_kills_the_rest_of_its_group(tmp_path):
    # a daemon's stop: the leader handles its TERM (exits 3); what it left in its group
    # got no TERM from here, only the KILL of `rest`
    pidfile = tmp_path / "pid"
    script = f"trap 'exit 3' TERM; sh -c 'trap \"\" TERM; sleep 300' & echo $! > {pidfile}; wait"
    p = started(script, pidfile)
    child = int(pidfile.read_text())
    assert proc.stop(p, grace=0, leader_grace=10) == 3
    assert not gone(child, 0.2)  # no `rest`: left as it was
    assert proc.stop(p, rest=True) == 3 and gone(child, 10)


def test_signal_child_reaches_the_child_until_it_is_reaped():
    p = proc.spawn(["sleep", "30"])
    assert proc.signal_child(p, signal.SIGHUP)
    assert proc.wait(p, 10) == -signal.SIGHUP
    assert not proc.signal_child(p, signal.SIGKILL)  # reaped: its pid may be another's


def test_run_takes_its_input_from_a_file_and_a_bare_spawn_is_reaped(tmp_path):
    data = tmp_path / "in"
    data.write_bytes(b"line one\nline two\n")
    assert proc.run(["wc", "-l"], stdin_path=data).stdout.strip() == "2"
    with pytest.raises(FileNotFoundError):
        proc.run(["cat"], stdin_path=tmp_path / "missing")
    assert proc.run_bare("/bin/true") == 0
