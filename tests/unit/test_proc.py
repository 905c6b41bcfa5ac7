import signal
import subprocess
import time

import psutil
import pytest

from virtbench.host import proc


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


def test_wait_wakes_at_exit_not_on_a_poll_tick():
    # Popen.wait(timeout)'s back-off notices a 50 ms child at ~64 ms; a pidfd right away.
    overshoot = []
    for _ in range(5):
        t0 = time.monotonic()
        p = proc.spawn(["sleep", "0.05"])
        assert proc.wait(p, 5) == 0
        overshoot.append(time.monotonic() - t0 - 0.05)
    assert sorted(overshoot)[2] < 0.008, overshoot
    p = proc.spawn(["sleep", "5"])
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(p, 0.1)
    proc.kill_group(p)
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


def test_capture_counts_stdout_keeps_stderrs_end_and_sees_the_exit():
    from virtbench.host import spawn

    res = spawn.capture(["sh", "-c", "head -c 300000 /dev/zero; echo oops >&2; exit 3"], 10)
    assert res.returncode == 3 and res.stdout_bytes == 300000 and res.stderr == b"oops\n"
    assert res.t_end_ns > res.t_start_ns
    res = spawn.capture(["sh", "-c", "head -c 10000 /dev/zero >&2"], 10, keep=100)
    assert res.returncode == 0 and res.stdout_bytes == 0 and res.stderr == b"\0" * 100
    # the exit seen at once: a 50 ms command is not noticed on a poll tick later
    took = sorted(
        (r.t_end_ns - r.t_start_ns) / 1e9
        for r in (spawn.capture(["sleep", "0.05"], 10) for _ in range(3))
    )
    assert took[1] < 0.05 + 0.008, took


def test_capture_that_outlives_its_timeout_is_killed_and_reaped():
    from virtbench.host import spawn

    t0 = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        spawn.capture(["sh", "-c", "echo start; exec sleep 30"], 0.3)
    assert time.monotonic() - t0 < 5
    with pytest.raises(subprocess.TimeoutExpired):  # its output closed, still running
        spawn.capture(["sh", "-c", "exec sleep 30 >/dev/null 2>&1"], 0.3)
    assert not [p for p in psutil.Process().children() if p.status() == psutil.STATUS_ZOMBIE]
