"""Host sampler cost: CPU time of virtbench's HostSampler thread at 10 Hz, N instances running.

N crun sleepers are started first, by the bash loop of bench/shell_sleepers.py (the
same background instances virtbench's scalability experiment runs). Then
`HostSampler(sink, interval)` runs for `--seconds` with the sink a run gives it:
`store.add_series(run_id, points)` into a real results Store (SQLite, WAL) in a
temporary directory. The sampler thread's own CPU clock (user + system, read with
`pthread_getcpuclockid`; so it holds the /proc reads, psutil's parsing and the SQLite
writes, and nothing of the rest of this process) is divided by the wall time: % of one
core. The ticks stored (distinct timestamps) are counted, to show the rate was kept.
Target: <= 0.5% of one core.

    .venv/bin/python bench/sampler_cpu.py [--instances 1000] [--seconds 30] [--interval 0.1]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from shell_sleepers import ShellSleepers

from virtbench.artifacts import build_minimal_rootfs
from virtbench.measure.sampler import HostSampler
from virtbench.paths import Paths
from virtbench.spec import InstanceOptions
from virtbench.store import Store

TARGET_PCT = 0.5


def sampler_cpu(run_id: str, seconds: float, interval: float) -> tuple[float, float, int]:
    """(sampler thread CPU s, wall s, ticks stored) of one HostSampler."""
    with tempfile.TemporaryDirectory(prefix="vb-bench-") as tmp:
        store = Store(Path(tmp))
        try:
            store.create_run(run_id, "sampler-cpu", sys.argv, {})
            sampler = HostSampler(lambda pts: store.add_series(run_id, pts), interval=interval)
            sampler.start()
            try:
                thread = next(t for t in threading.enumerate() if t.name == "vb-sampler")
                assert thread.ident is not None
                clock = time.pthread_getcpuclockid(thread.ident)
                c0, w0 = time.clock_gettime(clock), time.monotonic()
                time.sleep(seconds)
                c1, w1 = time.clock_gettime(clock), time.monotonic()
            finally:
                sampler.stop()
            return c1 - c0, w1 - w0, len({t for _, t, _ in store.series(run_id)})
        finally:
            store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--interval", type=float, default=0.1)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    paths = Paths.from_env()
    rootfs = build_minimal_rootfs(paths.guest_src, paths.cache).path
    with ShellSleepers(paths, rootfs, args.instances, InstanceOptions()) as sleepers:
        launch = sleepers.start()
        print(f"{args.instances} crun sleepers running (started in {launch:.2f} s)", flush=True)
        cpu, wall, ticks = sampler_cpu(sleepers.run_id, args.seconds, args.interval)
    pct = 100 * cpu / wall
    rate = ticks / wall
    print(
        f"host sampler at {1 / args.interval:g} Hz ({rate:.1f} samples/s stored): "
        f"{cpu * 1e3:.0f} ms CPU in {wall:.1f} s"
    )
    print(f"sampler CPU = {pct:.2f}% of one core (target <= {TARGET_PCT:g}%)", flush=True)


if __name__ == "__main__":
    main()
