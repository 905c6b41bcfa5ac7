"""Scalability's trend against hyperfine: how much slower a crun hello starts with idle
sleepers in the background, by hand.

virtbench's side is `virtbench run scalability --runtimes crun --instances N
--instances-per-benchmark S` as a user types it; its figure is the trend the report
prints (report/fits.py: boot.spawn_to_exit per 100 background instances, 95% CI).

The by-hand side: hyperfine times `crun run --bundle B name` (the command a user would
type; bench/byhand.py) with no background, then N sleepers are started with
the driver (`crun run -d`, each waited for until ready), hyperfine times the same
command again, and the sleepers go. Its slope is (figure at N - figure at 0) / N per
100; it is done before and after virtbench's run, and the two are averaged.

Which figure: back to back, crun's runs fall in modes some 4 ms apart (its cgroup
removal meets EBUSY and retries; measured here with 1200 sleepers: 15 of 30 runs near
8 ms, the rest 11-22 ms), so hyperfine's median sits wherever the split falls from one
run to the next. Its lower quartile is the figure of a run without the retry, which is
what virtbench's launches after a quiet wait mostly are. Both are printed; the lower
quartile is set against virtbench's 95% CI, with the ratio.

    .venv/bin/python bench/trend_vs_hyperfine.py [--instances 1200] [--step 200]
        [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import byhand
import virtbench_run

from virtbench import naming, runtimes
from virtbench.artifacts import build_minimal_rootfs
from virtbench.host import cgroups
from virtbench.host.state import RunState
from virtbench.measure.probe import ProbeListener
from virtbench.paths import Paths
from virtbench.report.fits import PER, trend
from virtbench.runtimes.base import InstanceSpec, RuntimeContext
from virtbench.store import Store
from virtbench.workloads import hello, sleep

LABEL = "crun"


def hyperfine_times(argv: list[str], env: dict[str, str], runs: int) -> list[float]:
    """hyperfine's run times of `argv` (ms), after 3 warm-ups."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [
                "hyperfine",
                "-N",
                "--warmup",
                "3",
                "--runs",
                str(runs),
                "--export-json",
                out.name,
                shlex.join(argv),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        return [t * 1e3 for t in json.loads(Path(out.name).read_text())["results"][0]["times"]]


def figures(times: list[float]) -> tuple[float, float]:
    """(lower quartile, median) of run times."""
    q = statistics.quantiles(times, n=4)
    return q[0], q[1]


def by_hand(n: int, runs: int, paths: Paths, rootfs: Path) -> tuple[list[float], list[float]]:
    """hyperfine's crun hello times (ms) with no background, then with `n` sleepers."""
    rid = naming.new_run_id()
    state = RunState(paths.run_dir(rid)).open()
    probe = ProbeListener(state.dir / "probe")
    ctx = RuntimeContext(rid, state, paths, cgroups.Layout.detect(), rootfs=rootfs, probe=probe)
    rt = runtimes.create(LABEL, ctx)
    name = naming.name(rid, "hf")
    inst, argv, env = byhand.command_line(rt, InstanceSpec(name, hello.argv(name), rootfs))
    started = []
    try:
        alone = hyperfine_times(argv, env, runs)
        for i in range(1, n + 1):
            bg = naming.instance(rid, i)
            started.append(rt.start(InstanceSpec(bg, sleep.argv(bg), rootfs)))
            if probe.wait(bg, 60) is None:
                raise SystemExit(f"{LABEL}: background instance {bg} never got ready")
        loaded = hyperfine_times(argv, env, runs)
    finally:
        rt.stop(inst)
        for bg_inst in started:
            rt.stop(bg_inst)
        rt.close()
        probe.close()
        state.close()
    return alone, loaded


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, default=1200)
    ap.add_argument("--step", type=int, default=200)
    ap.add_argument("--runs", type=int, default=30, help="hyperfine runs at each end")
    args = ap.parse_args()
    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    before = by_hand(args.instances, args.runs, paths, art.path)
    results = Path(tempfile.mkdtemp(prefix="vb-trend-"))
    try:
        run_id = virtbench_run.run(
            [
                "scalability",
                "--runtimes",
                LABEL,
                "--instances",
                str(args.instances),
                "--instances-per-benchmark",
                str(args.step),
            ],
            results,
        )
        store = Store(results)
        try:
            fit = trend(store.samples(run_id), "boot.spawn_to_exit", LABEL)
        finally:
            store.close()
    finally:
        shutil.rmtree(results, ignore_errors=True)
    after = by_hand(args.instances, args.runs, paths, art.path)
    if fit is None:
        raise SystemExit("virtbench's run gave no trend")
    per = PER / args.instances
    slopes = []
    for when, (alone, loaded) in zip(("before", "after"), (before, after), strict=True):
        (q0, m0), (q1, m1) = figures(alone), figures(loaded)
        slopes.append(((q1 - q0) * per, (m1 - m0) * per))
        print(
            f"by hand {when}: crun hello lower quartile / median {q0:.3g} / {m0:.3g} ms "
            f"alone, {q1:.3g} / {m1:.3g} ms beside {args.instances} sleepers: "
            f"{slopes[-1][0]:+.3g} / {slopes[-1][1]:+.3g} ms per {PER}"
        )
    hand = statistics.fmean(q for q, _ in slopes)
    inside = fit.ci_low <= hand <= fit.ci_high
    print(
        f"virtbench: {fit.slope:+.3g} ms per {PER} (95% CI {fit.ci_low:.3g} to "
        f"{fit.ci_high:.3g}); by hand (lower quartiles) {hand:+.3g}: "
        f"{'inside' if inside else 'outside'} the CI; ratio {fit.slope / hand:.3f}"
    )


if __name__ == "__main__":
    main()
