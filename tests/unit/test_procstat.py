"""Per-instance resource use (measure/procstat.py) against /proc files the test writes,
and once against a real busy process."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from virtbench.measure import procstat
from virtbench.measure.procstat import CLK_TCK, MIB, PAGE, ProcWatch


def write_stat(proc, pid, user, system, guest, rss_pages, name="nginx: worker (x)"):
    """A /proc/PID/stat line with these counters (every other field 0)."""
    fields = ["S"] + ["0"] * 49
    fields[11], fields[12], fields[21], fields[40] = (
        str(user),
        str(system),
        str(rss_pages),
        str(guest),
    )
    (proc / str(pid)).mkdir(parents=True, exist_ok=True)
    (proc / str(pid) / "stat").write_text(f"{pid} ({name}) {' '.join(fields)}\n")


def test_ticks_cpu_and_rss_follow_the_processes_as_they_come_and_go(tmp_path):
    proc = tmp_path / "proc"
    now = [100.0]
    pids = [10]
    write_stat(proc, 10, user=500, system=100, guest=0, rss_pages=256)  # before: not counted
    write_stat(proc, 99, user=7, system=3, guest=0, rss_pages=100)  # a daemon
    w = ProcWatch("proc/x", lambda: list(pids), [99], proc=proc, clock=lambda: now[0])
    w.begin()
    now[0] += 2.0  # 2 s later: 1 CPU-second used, and a forked child with 0.5 s
    write_stat(proc, 10, user=500 + CLK_TCK // 2, system=100 + CLK_TCK // 2, guest=0, rss_pages=512)
    write_stat(proc, 11, user=CLK_TCK // 2, system=0, guest=0, rss_pages=256)
    pids.append(11)
    points = {name: v for name, _, v in w.tick(1.0)}
    assert points["proc/x/instance.cpu_pct"] == 75.0  # 1.5 CPU-seconds over 2 s
    assert points["proc/x/instance.rss_mib"] == 768 * PAGE / MIB
    assert points["proc/x/instance.user_ticks"] == CLK_TCK  # cumulative since begin
    assert points["proc/x/daemon.cpu_pct"] == 0.0
    now[0] += 2.0  # the child ended (its last interval is lost); the server went on
    pids.remove(11)
    (proc / "11" / "stat").unlink()
    write_stat(proc, 10, user=500 + CLK_TCK, system=100 + CLK_TCK // 2, guest=0, rss_pages=512)
    write_stat(proc, 99, user=7 + CLK_TCK, system=3, guest=0, rss_pages=100)
    totals = w.end()
    assert totals["resources.instance.cpu_user_s"] == (1.5, "s")
    assert totals["resources.instance.cpu_system_s"] == (0.5, "s")
    assert totals["resources.instance.cpu_pct"] == (50.0, "%")  # 2 CPU-seconds over 4 s
    assert totals["resources.instance.rss_max_mib"] == (768 * PAGE / MIB, "MiB")
    assert totals["resources.daemon.cpu_user_s"] == (1.0, "s")
    assert totals["resources.daemon.cpu_guest_s"] == (0.0, "s")


def test_a_name_with_spaces_and_parentheses_and_a_vanished_pid(tmp_path):
    write_stat(tmp_path, 5, user=3, system=4, guest=2, rss_pages=9, name="a) b (c")
    assert procstat.read_stat(5, tmp_path) == procstat.Stat(3, 4, 2, 9)
    assert procstat.read_stat(6, tmp_path) is None


def _kernel_cpu_s(pid: int) -> float:
    """The process's user and system CPU seconds by the kernel's own accounting."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def test_a_real_busy_process_reads_as_the_kernel_counts_it():
    """Cross-check on this host: a busy loop watched until the kernel has counted 0.6 CPU
    seconds more (however long that takes on a loaded host): its CPU seconds agree with
    the kernel's own accounting, and its share of a CPU with them over the time watched."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        w = ProcWatch("p", lambda: [busy.pid])
        start, t0 = _kernel_cpu_s(busy.pid), time.time()
        w.begin()
        deadline = time.monotonic() + 120
        while _kernel_cpu_s(busy.pid) < start + 0.6 and time.monotonic() < deadline:
            time.sleep(0.05)
        t1 = time.time()
        w.tick(t1)
        totals = w.end()
        kernel_s = _kernel_cpu_s(busy.pid)
    finally:
        busy.kill()
        busy.wait()
    used = totals["resources.instance.cpu_user_s"][0] + totals["resources.instance.cpu_system_s"][0]
    assert 0.5 < used <= kernel_s - start + 0.02  # from begin only: never more than the kernel's
    pct = totals["resources.instance.cpu_pct"][0]
    assert 0 < pct <= 110
    assert pct == pytest.approx(100 * used / (t1 - t0), rel=0.25)


def test_every_total_is_declared_with_its_unit_and_follows_no_worker(tmp_path):
    from virtbench import metrics

    write_stat(tmp_path, 1, 1, 1, 0, 1)
    w = ProcWatch("p", lambda: [1], [1], proc=tmp_path, clock=iter([0.0, 1.0, 2.0]).__next__)
    w.begin()
    for name, (_, unit) in w.end().items():
        m = metrics.find(name, "nginx")
        assert m is not None and m.unit == unit and m.direction == "lower", name
        assert not m.headline and not m.repeated and m.plot == "resources"


def test_the_time_an_instance_waited_is_the_growth_of_its_pressure_totals(tmp_path):
    """Injected pressure totals (microseconds some task waited): 0.5 s of CPU waiting and
    0.1 s of memory over a 2 s watch read 25% and 5%; io, which did not grow, 0%; a
    resource read only at the start is left out, as is every share without a second read."""
    from virtbench import metrics

    write_stat(tmp_path, 1, 1, 1, 0, 1)
    reads = iter(
        [
            {"cpu": 1_000_000, "memory": 0, "io": 7, "gone": 5},
            {"cpu": 1_500_000, "memory": 100_000, "io": 7},
        ]
    )
    clock = iter([0.0, 2.0]).__next__
    w = ProcWatch("p", lambda: [1], proc=tmp_path, clock=clock, stalls=reads.__next__)
    w.begin()
    stalls = {k: v for k, v in w.end().items() if "stall" in k}
    assert stalls == {
        "resources.instance.cpu_stall_pct": (25.0, "%"),
        "resources.instance.memory_stall_pct": (5.0, "%"),
        "resources.instance.io_stall_pct": (0.0, "%"),
    }
    for name in stalls:
        m = metrics.find(name, "nginx")
        assert m is not None and m.unit == "%" and m.direction == "lower", name
    clock = iter([0.0, 2.0]).__next__
    unread = ProcWatch("p", lambda: [1], proc=tmp_path, clock=clock, stalls=lambda: None)
    unread.begin()
    assert not [k for k in unread.end() if "stall" in k]  # v1: no pressure, no figure
