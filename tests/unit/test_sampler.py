"""The host sampler's one-pass reads give exactly what psutil's calls gave."""

from __future__ import annotations

import random
from pathlib import Path

import psutil
import pytest

from virtbench.measure import sampler

MEMINFO = """MemTotal:        {total} kB
MemFree:         {free} kB
MemAvailable:    {avail} kB
Buffers:           12345 kB
Cached:           456789 kB
SwapCached:            0 kB
Active:           345678 kB
Inactive:         234567 kB
Shmem:              1234 kB
Slab:              56789 kB
SReclaimable:      23456 kB
SwapTotal:       {swap} kB
SwapFree:        {swapfree} kB
"""
VMSTAT = "nr_free_pages 1000\npswpin 7\npswpout 9\n"
FIELDS = len(psutil.cpu_times()._fields)  # as this kernel's /proc/stat has them


def rewrite(path: Path, text: str) -> None:
    """In place (same inode): the sampler keeps its descriptors open."""
    with open(path, "r+b" if path.exists() else "wb") as fh:
        fh.truncate(0)
        fh.write(text.encode())


def stat_text(times: list[int]) -> str:
    cpus = "".join(f"cpu{i} " + " ".join(map(str, times)) + "\n" for i in range(2))
    return "cpu  " + " ".join(map(str, times)) + "\n" + cpus + "intr 1 2 3\nctxt 42\n"


@pytest.fixture
def procfs(tmp_path, monkeypatch):
    monkeypatch.setattr(psutil, "PROCFS_PATH", str(tmp_path))
    return tmp_path


def test_host_reads_are_psutils_values(procfs):
    rng = random.Random(7)
    times = [rng.randrange(10**6, 10**9) for _ in range(FIELDS)]
    rewrite(procfs / "stat", stat_text(times))
    rewrite(procfs / "vmstat", VMSTAT)
    rewrite(procfs / "meminfo", MEMINFO.format(total=1, free=1, avail=1, swap=0, swapfree=0))
    reads = sampler.HostReads(str(procfs))
    try:
        psutil.cpu_times_percent(None)  # psutil's own previous snapshot, the same one
        for k in range(200):
            times = [t + rng.choice((0, 0, rng.randrange(1, 500))) for t in times]
            if k % 17 == 0:
                times[3] -= 5  # a counter going back: psutil counts it as 0
            rewrite(procfs / "stat", stat_text(times))
            total = rng.randrange(10**5, 10**8)
            avail = rng.randrange(1, total + 1)
            swap = rng.choice((0, rng.randrange(1, 10**7)))
            mem = dict(total=total, free=rng.randrange(0, avail + 1), avail=avail, swap=swap)
            rewrite(procfs / "meminfo", MEMINFO.format(**mem, swapfree=rng.randrange(0, swap + 1)))
            cpu = psutil.cpu_times_percent(None)
            want = {"host.cpu_idle_pct": float(cpu.idle), "host.steal_pct": float(cpu.steal)}
            assert reads.cpu_pct() == want
            assert reads.memory_pct() == sampler._memory_pct()
    finally:
        reads.close()


def test_a_meminfo_psutil_would_correct_is_left_to_psutil(procfs):
    rewrite(procfs / "stat", stat_text([1] * FIELDS))
    rewrite(procfs / "vmstat", VMSTAT)
    rewrite(procfs / "meminfo", "")
    reads = sampler.HostReads(str(procfs))
    try:
        for avail in (0, 5000):  # none (psutil estimates it), more than the total
            mem = MEMINFO.format(total=4000, free=1000, avail=avail, swap=100, swapfree=50)
            rewrite(procfs / "meminfo", mem)
            assert reads.memory_pct() == sampler._memory_pct()
    finally:
        reads.close()


def test_the_sampler_hands_each_ticks_four_series_about_once_a_second():
    import time

    got: list[list[tuple[str, float, float]]] = []
    s = sampler.HostSampler(got.append, interval=0.05).start()
    try:
        time.sleep(1.3)
        assert len(got) == 1  # the first second's ticks, together
    finally:
        s.stop()
    assert len(got) == 2  # and the rest once stopped
    ticks: dict[float, set[str]] = {}
    for name, t, value in (p for batch in got for p in batch):
        ticks.setdefault(t, set()).add(name)
        assert 0.0 <= value <= 100.0
    assert 20 <= len(ticks) <= 27
    names = {"host.cpu_idle_pct", "host.steal_pct", "host.mem_available_pct"}
    assert all(n == names | {"host.swap_free_pct"} for n in ticks.values())
