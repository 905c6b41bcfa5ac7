"""Memory per instance: virtbench's fitted host cost and its kernel side against a by-hand
figure from /proc/meminfo, per runtime.

virtbench's side is `virtbench run density --runtimes R --instances N
--instances-per-benchmark S` as a user types it; its figures are the slopes the report
prints (report/fits.py: host memory in use, and Slab + PageTables + KernelStack + Percpu,
against instances running, caches dropped at each step).

The by-hand side starts the same N instances of density's `sleep` workload (vb-sleep,
which signals over the probe) through the runtime's driver (crun: `crun run
-d`, docker: the Engine API, runsc: `runsc run -d`: what a script of the user's would
run), each waited for until ready, with no step in between: caches dropped, then host
memory in use (`free -b`'s used, less the free pages on the per-CPU lists that
/proc/zoneinfo counts) and the kernel side (/proc/meminfo) read before the first and
after the last, each once memory in use stopped changing (the kernel frees what an
earlier teardown left over seconds), (after - before) / N. virtbench runs `--pileups`
pile-ups (one run, their slopes pooled), with as many by-hand pile-ups before it and
after it; the ratio is virtbench's slope over the by-hand figures' mean. The per-CPU
free lists held 95-125 MiB here and moved by 30 MiB within seconds: counted as used, as
MemAvailable does, they made one pile-up of 100 crun sleepers read 0.33 to 0.51 MiB per
instance. Target: each ratio within 0.85-1.15.

    .venv/bin/python bench/memory_vs_hand.py [--runtimes crun,docker,runsc]
        [--instances 100] [--step 10] [--pileups 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import virtbench_run

from virtbench import naming, runtimes
from virtbench.analysis.fit import Fit
from virtbench.artifacts import build_minimal_rootfs
from virtbench.experiments.density import KERNEL_FIELDS
from virtbench.host import cgroups
from virtbench.host.state import RunState
from virtbench.measure import memory
from virtbench.measure.probe import ProbeListener
from virtbench.paths import Paths
from virtbench.report.fits import cost_fits
from virtbench.runtimes.base import InstanceSpec, RuntimeContext
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
    free = subprocess.run(["free", "-b"], capture_output=True, text=True, check=True).stdout
    used = int(free.splitlines()[1].split()[2])  # procps: MemTotal - MemAvailable
    zoneinfo = Path("/proc/zoneinfo").read_text().split()
    pcp = sum(int(zoneinfo[i + 1]) for i, w in enumerate(zoneinfo) if w == "count:")
    used -= pcp * os.sysconf("SC_PAGE_SIZE")  # free pages on per-CPU lists are free
    return used / MIB, sum(info.get(k, 0) for k in KERNEL_FIELDS) / MIB


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
            name = naming.instance(rid, i)
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


def virtbench_costs(label: str, n: int, step: int, runs: int) -> tuple[Fit, Fit]:
    """virtbench's (host cost, kernel cost) fits over `runs` pile-ups of one run."""
    results = Path(tempfile.mkdtemp(prefix="vb-mem-"))
    try:
        run_id = virtbench_run.run(
            [
                "density",
                "--runtimes",
                label,
                "--runs",
                str(runs),
                "--instances",
                str(n),
                "--instances-per-benchmark",
                str(step),
            ],
            results,
        )
        store = Store(results)
        try:
            fits = cost_fits(store.samples(run_id))
        finally:
            store.close()
    finally:
        shutil.rmtree(results, ignore_errors=True)
    return fits[("density.host_cost", label)], fits[("density.kernel_cost", label)]


def check(labels: list[str], n: int, step: int, pileups: int = 2) -> bool:
    """Print each runtime's ratios; whether all are within BAND. `pileups`: virtbench's
    pile-ups (one run), and the by-hand ones before it and after it each."""
    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    ok = True
    for label in labels:
        hands = [by_hand(label, n, paths, art.path) for _ in range(pileups)]
        host, kernel = virtbench_costs(label, n, step, pileups)
        hands += [by_hand(label, n, paths, art.path) for _ in range(pileups)]
        for what, f, mine in (
            ("host", host, [h[0] for h in hands]),
            ("kernel", kernel, [h[1] for h in hands]),
        ):
            ratio = f.slope / statistics.mean(mine)
            good = BAND[0] <= ratio <= BAND[1]
            ok &= good
            each = " / ".join(f"{x:.3f}" for x in mine)
            print(
                f"{label:8} {what:6} per instance: by hand {each} MiB (mean "
                f"{statistics.mean(mine):.3f})   virtbench {f.slope:.3f} MiB (95% CI "
                f"{f.ci_low:.3f}-{f.ci_high:.3f}, {f.groups} pile-ups)   ratio {ratio:.3f} "
                f"({BAND[0]}-{BAND[1]}: {'ok' if good else 'MISSED'})",
                flush=True,
            )
    return ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtimes", default="crun,docker,runsc")
    ap.add_argument("--instances", type=int, default=100)
    ap.add_argument("--step", type=int, default=10)
    ap.add_argument(
        "--pileups",
        type=int,
        default=2,
        help="virtbench's (one run), and the by-hand ones before and after it each",
    )
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    ok = check(args.runtimes.split(","), args.instances, args.step, args.pileups)
    print(f"memory vs hand: {'ok' if ok else 'MISSED'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
