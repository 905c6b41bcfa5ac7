"""Memory per instance: virtbench's fitted host cost and its kernel side against a by-hand
figure from /proc/meminfo, per runtime.

virtbench's side is `virtbench run density --runtimes R --instances N
--instances-per-benchmark S` as a user types it; its figures are the slopes the report
prints (report/fits.py: host memory in use, and Slab + PageTables + KernelStack + Percpu,
against instances running, caches dropped at each step).

The by-hand side starts the same N instances of density's `sleep` workload (vb-ready
signals over the probe, then vb-sleep) through the runtime's driver (crun: `crun run
-d`, docker: the Engine API, runsc: `runsc run -d`: what a script of the user's would
run), each waited for until ready, with no step in between: caches dropped and /proc/meminfo read
before the first and after the last, each once memory in use stopped changing (the
kernel frees what an earlier teardown left over seconds), (after - before) / N. It runs
before and after virtbench's run, and the ratio is virtbench's slope over the mean of
the two by-hand figures. Target: each ratio within 0.85-1.15.

    .venv/bin/python bench/memory_vs_hand.py [--runtimes crun,docker,runsc]
        [--instances 100] [--step 10]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import virtbench_run

from virtbench import cgroups, naming, runtimes
from virtbench.artifacts import build_minimal_rootfs
from virtbench.experiments.density import KERNEL_FIELDS
from virtbench.fit import Fit
from virtbench.measure import memory
from virtbench.measure.probe import ProbeListener
from virtbench.paths import Paths
from virtbench.report.fits import cost_fits
from virtbench.runtimes.base import InstanceSpec, RuntimeContext
from virtbench.state import RunState
from virtbench.store import Store
from virtbench.workloads import sleep

BAND = (0.85, 1.15)
SETTLE_S = 15.0  # as density's default memory_settle_s
MIB = 1024 * 1024


def reading() -> tuple[float, float]:
    """(host memory in use, kernel side) in MiB, once it stopped changing (caches
    dropped: memory.settle)."""
    memory.settle(SETTLE_S)
    info = memory.meminfo()
    used = (info["MemTotal"] - info["MemAvailable"]) / MIB
    return used, sum(info.get(k, 0) for k in KERNEL_FIELDS) / MIB


def by_hand(label: str, n: int, paths: Paths, rootfs: Path) -> tuple[float, float]:
    """(host MiB per instance, kernel MiB per instance) of `n` sleepers started by the
    driver one after another, from two readings."""
    rid = naming.new_run_id()
    state = RunState(paths.run_dir(rid)).open()
    probe = ProbeListener(state.dir / "probe")
    ctx = RuntimeContext(rid, state, paths, cgroups.Layout.detect(), rootfs=rootfs, probe=probe)
    rt = runtimes.create(label, ctx)
    started = []
    try:
        rt.setup()
        used0, kernel0 = reading()
        for i in range(n):  # density's `sleep`: signal ready, then sleep
            name = naming.name(rid, f"h{i}")
            started.append(rt.start(InstanceSpec(name, sleep.argv(name), rootfs)))
            if probe.wait(name, 60) is None:
                raise SystemExit(f"{label}: instance {name} never got ready")
        used1, kernel1 = reading()
    finally:
        for inst in started:
            rt.stop(inst)
        rt.close()
        ctx.daemons.close()
        probe.close()
        state.close()
    return (used1 - used0) / n, (kernel1 - kernel0) / n


def virtbench_costs(label: str, n: int, step: int) -> tuple[float, float, str, str]:
    """virtbench's (host cost, kernel cost) slopes and their 95% CIs as text."""
    results = Path(tempfile.mkdtemp(prefix="vb-mem-"))
    try:
        run_id = virtbench_run.run(
            ["density", "--runtimes", label, "--runs", "1", "--instances", str(n),
             "--instances-per-benchmark", str(step)], results,
        )  # fmt: skip
        store = Store(results)
        try:
            fits = cost_fits(store.samples(run_id))
        finally:
            store.close()
    finally:
        shutil.rmtree(results, ignore_errors=True)
    host, kernel = fits[("density.host_cost", label)], fits[("density.kernel_cost", label)]

    def ci(f: Fit) -> str:
        return f"{f.ci_low:.3f}-{f.ci_high:.3f}"

    return host.slope, kernel.slope, ci(host), ci(kernel)


def check(labels: list[str], n: int, step: int) -> bool:
    """Print each runtime's ratios; whether all are within BAND."""
    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    ok = True
    for label in labels:
        h1 = by_hand(label, n, paths, art.path)
        vb_host, vb_kernel, ci_host, ci_kernel = virtbench_costs(label, n, step)
        h2 = by_hand(label, n, paths, art.path)
        for what, vb, ci, hands in (("host", vb_host, ci_host, (h1[0], h2[0])),
                                    ("kernel", vb_kernel, ci_kernel, (h1[1], h2[1]))):  # fmt: skip
            ratio = vb / statistics.mean(hands)
            good = BAND[0] <= ratio <= BAND[1]
            ok &= good
            print(f"{label:8} {what:6} per instance: by hand {hands[0]:.3f} / {hands[1]:.3f} "
                  f"MiB   virtbench {vb:.3f} MiB (95% CI {ci})   ratio {ratio:.3f} "
                  f"({BAND[0]}-{BAND[1]}: {'ok' if good else 'MISSED'})", flush=True)  # fmt: skip
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtimes", default="crun,docker,runsc")
    ap.add_argument("--instances", type=int, default=100)
    ap.add_argument("--step", type=int, default=10)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    ok = check(args.runtimes.split(","), args.instances, args.step)
    print(f"memory vs hand: {'ok' if ok else 'MISSED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
