import subprocess
import time

import pytest

from virtbench import proc


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
