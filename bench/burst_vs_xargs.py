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

import statistics
from pathlib import Path

import numpy as np
import shell_sleepers
import virtbench_run
from alternate import alternate, setup

from virtbench.paths import Paths

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
    samples = virtbench_run.samples_of(spec_text(n))
    each = [x for x in samples if x.metric == f"burst.spawn_to_ready@{n}"]
    if len(each) != n or any(x.value is None for x in each):
        errors = [x.error for x in each if x.error]
        raise SystemExit(f"virtbench's burst readied {len(each)} of {n}: {errors[:1]}")
    return [(x.params["launch_offset_ms"] + x.value) / 1e3 for x in each]


def shell_burst(paths: Paths, rootfs: Path, n: int) -> list[float]:
    with shell_sleepers.for_spec(paths, rootfs, n, spec_text(n)) as sleepers:
        return sleepers.burst()


def main() -> None:
    args, paths, rootfs = setup(__doc__, instances=100, settle=10)
    n = args.instances

    def show(who: str, times: list[float]) -> float:
        p50, p95, mx = (float(np.percentile(times, q)) * 1e3 for q in (50, 95, 100))
        print(
            f"{who:10} {n} crun sleepers at once: to ready p50 {p50:8.1f} ms, p95 {p95:8.1f} "
            f"ms, max {mx:8.1f} ms",
            flush=True,
        )
        return p50

    sh, vb = alternate(
        lambda: show("xargs -P", shell_burst(paths, rootfs, n)),
        lambda: show("virtbench", virtbench_burst(n)),
        args.rounds,
        args.settle,
    )
    ratio = statistics.mean(vb) / statistics.mean(sh)
    spread = f"xargs {min(sh):.0f}-{max(sh):.0f} ms, virtbench {min(vb):.0f}-{max(vb):.0f} ms"
    print(
        f"burst ratio virtbench/xargs p50 at {n} = {ratio:.3f} (target <= {TARGET}; {spread})",
        flush=True,
    )


if __name__ == "__main__":
    main()
