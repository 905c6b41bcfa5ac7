"""Why every timed launch is primed (measure/quiet.py `Primer`): on this kernel a process
that joins a cgroup right after another migration starts fast, and one that joins after
a rest waits for an RCU grace period.

Times, with virtbench's own launcher, the artifact's `vb-hello`: plain (no cgroup), and
joining one scratch cgroup per mounted v1 hierarchy (`vb-cgexec DIRS -- vb-hello`), each
back to back and after a rest of `--rest` seconds. Prints the medians.

    .venv/bin/python bench/cgroup_lock.py [--runs 12] [--rest 0.2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from virtbench import naming
from virtbench.artifacts import build_minimal_rootfs
from virtbench.host import cgroups, proc
from virtbench.paths import Paths


def launch(argv: list[str]) -> float:
    """ms from spawn to exit (pidfd), as the native runtime times it."""
    t = time.monotonic_ns()
    p = proc.spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc.wait(p, 10)
    return (time.monotonic_ns() - t) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--rest", type=float, default=0.2)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    hello, cgexec = str(art.path / "bin/vb-hello"), str(art.path / "bin/vb-cgexec")
    layout = cgroups.Layout.detect()
    name = naming.name(naming.new_run_id(), "lock")
    dirs = cgroups.create(layout, name, None, None)
    try:
        for what, argv in (
            ("plain exec", [hello]),
            ("joining cgroups", [cgexec, *map(str, dirs), "--", hello]),
        ):
            for rest in (0.0, args.rest):
                times = []
                for _ in range(args.runs):
                    time.sleep(rest)
                    times.append(launch(argv))
                print(
                    f"{what:16} after {rest * 1e3:5.0f} ms of rest: median "
                    f"{statistics.median(times):6.2f} ms  (min {min(times):.2f}, "
                    f"max {max(times):.2f}, n={len(times)})",
                    flush=True,
                )
    finally:
        for d in dirs:
            cgroups.kill_and_remove(d)


if __name__ == "__main__":
    main()
