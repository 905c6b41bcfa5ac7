"""Burst launcher overhead: N crun sleepers started at once by virtbench's `burst`
experiment against a shell's `xargs -P N` starting the same.

virtbench's side is what a user runs: `virtbench run SPEC` with one burst experiment on
crun at level N (network "none", one run). Each instance's time to ready, counted from the
burst's first launch call (its params' `launch_offset_ms` plus its `spawn_to_ready`), so
that a launcher slow to issue the calls pays for it.

The shell's side (bench/shell_sleepers.py `burst`): the same N sleepers, with virtbench's
own config.json, configs written first (untimed, as virtbench prepares its instances
untimed), then `xargs -P N -I{} crun run -d --bundle B/{} {}`; each instance's time to
ready counted from just before xargs is spawned, by the same probe listener.

The two alternate, shell first and last, `--rounds` virtbench runs in all, each after
`--settle` seconds of rest; the ratio is the mean of virtbench's p50s over the mean of the
shell's. Target: <= 1.0.

    .venv/bin/python bench/burst_vs_xargs.py [--instances 100] [--rounds 2] [--settle 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np
import virtbench_run
from shell_sleepers import ShellSleepers

from virtbench import spec as specmod
from virtbench.artifacts import build_minimal_rootfs
from virtbench.paths import Paths
from virtbench.spec.resolved import resolve
from virtbench.store import Store

TARGET = 1.0


def spec_text(n: int) -> str:
    # the shell's bundles are the plain ones (shell_sleepers.py): virtbench's too, so that
    # the ratio is virtbench's own overhead, not an overlay or a seccomp filter
    return (
        'name = "burst-vs-xargs"\nruntimes = ["crun"]\n[runtime.crun]\nrootfs = "dir"\n'
        'security = "minimal"\n[instance]\nnetwork = "none"\n'
        f'[[experiment]]\ntype = "burst"\nlevels = [{n}]\nruns = 1\n'
        "settle_s = 0\n"
    )


def virtbench_burst(n: int) -> list[float]:
    """Each instance's seconds from the burst's first launch call to its ready datagram,
    in a real `virtbench run`."""
    with tempfile.TemporaryDirectory(prefix="vb-bench-") as tmp:
        path = Path(tmp) / "burst.toml"
        path.write_text(spec_text(n))
        run_id = virtbench_run.run([str(path)], Path(tmp))
        samples = Store(Path(tmp)).samples(run_id)
    each = [x for x in samples if x.metric == f"burst.spawn_to_ready@{n}"]
    if len(each) != n or any(x.value is None for x in each):
        errors = [x.error for x in each if x.error]
        raise SystemExit(f"virtbench's burst readied {len(each)} of {n}: {errors[:1]}")
    return [(x.params["launch_offset_ms"] + x.value) / 1e3 for x in each]


def shell_burst(paths: Paths, rootfs: Path, n: int) -> list[float]:
    spec = specmod.parse(tomllib.loads(spec_text(n)), "burst spec")
    opts = resolve(spec).runtimes["crun"].instance
    with ShellSleepers(paths, rootfs, n, opts) as sleepers:
        return sleepers.burst()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2, help="virtbench runs (shell: one more)")
    ap.add_argument("--settle", type=float, default=10, help="rest before each burst (s)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    n = args.instances
    paths = Paths.from_env()
    rootfs = build_minimal_rootfs(paths.guest_src, paths.cache).path

    def show(who: str, times: list[float]) -> float:
        p50, p95, mx = (float(np.percentile(times, q)) * 1e3 for q in (50, 95, 100))
        print(
            f"{who:10} {n} crun sleepers at once: to ready p50 {p50:8.1f} ms, p95 {p95:8.1f} "
            f"ms, max {mx:8.1f} ms",
            flush=True,
        )
        return p50

    sh, vb = [], []
    time.sleep(args.settle)
    sh.append(show("xargs -P", shell_burst(paths, rootfs, n)))
    for _ in range(args.rounds):
        time.sleep(args.settle)
        vb.append(show("virtbench", virtbench_burst(n)))
        time.sleep(args.settle)
        sh.append(show("xargs -P", shell_burst(paths, rootfs, n)))
    ratio = statistics.mean(vb) / statistics.mean(sh)
    spread = f"xargs {min(sh):.0f}-{max(sh):.0f} ms, virtbench {min(vb):.0f}-{max(vb):.0f} ms"
    print(
        f"burst ratio virtbench/xargs p50 at {n} = {ratio:.3f} (target <= {TARGET}; {spread})",
        flush=True,
    )


if __name__ == "__main__":
    main()
