"""Boot-measurement overhead: virtbench's `spawn_to_exit` against hyperfine, per runtime.

For each runtime the driver prepares a `hello` instance exactly as a run would (bundle,
config, image) and says which command a user would type to do the same by hand
(byhand.py: e.g. `crun run --bundle B name`, `docker run --rm ... IMG /bin/vb-hello`,
`lxc-start -F -n name -P path`). hyperfine times that command before
and after `virtbench run boot --runtimes <label> --workloads hello` on the same host;
the ratio of virtbench's median to the mean of the two hyperfine medians is printed.
hyperfine's runs follow each other at once; virtbench's each follow a quiet wait (tens of
ms without a runnable task, then measure/quiet.py's Primer: one cgroup migration and one
process started). A third hyperfine is printed beside, without a target: each run
preceded, untimed, by what virtbench does before a launch (`sleep REST`, `--rest`,
default 0.03 s, about virtbench's quiet window; then the shell moves itself into a cgroup
of its own and execs /bin/true), so the same command timed from the state virtbench
times it from. Here a native launch (~0.7 ms back to back) takes ~0.3 ms more from that
state, in hyperfine as in virtbench; a rest without the migration costs hyperfine
several ms more (the cgroup lock's grace period: quiet.py).
Where the by-hand foreground command returns long after the exit (LXD's `lxc launch`
waits ~5 s for an init that already left), the detached launch of `sleep` is compared
with `spawn_to_started` instead, each hyperfine run preceded by an untimed
`prepare_command` (byhand.py: removing the previous instance).
A pod (`cri:*`) is timed the same way: its launch call (RunPodSandbox, CreateContainer,
StartContainer) against a shell loop of `crictl runp && crictl create && crictl start`
with the driver's own pod and container files, each try after the previous pod's removal.
Target: ratio <= 1.05 for native, crun and runc (`make bench` runs those three) and for
`cri:crun`, <= 1.2 for every other runtime.

    .venv/bin/python bench/boot_vs_hyperfine.py [--runs 20] [--runtimes native,crun,runc]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import byhand
import virtbench_run

from virtbench import naming, runtimes
from virtbench.artifacts import build_minimal_rootfs
from virtbench.host import cgroups
from virtbench.host.state import RunState
from virtbench.paths import Paths
from virtbench.runtimes.base import InstanceSpec, RuntimeContext
from virtbench.store import Store
from virtbench.workloads import hello

TARGETS = {
    "native": 1.05,
    "crun": 1.05,
    "runc": 1.05,
    "cri:crun": 1.05,
}  # by label; any other: DEFAULT_TARGET
DEFAULT_TARGET = 1.2


def hyperfine_median(
    argv: list[str], env: dict[str, str], runs: int, prepare: list[str] | None
) -> float:
    env = {**os.environ, **env}
    extra = []
    if prepare:  # e.g. remove the instance the previous run left; it must exist first
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        extra = ["--prepare", shlex.join(prepare)]
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
                *extra,
                shlex.join(argv),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        if prepare:
            subprocess.run(prepare, check=True, stdout=subprocess.DEVNULL, env=env)
        data = json.loads(Path(out.name).read_text())
    return statistics.median(data["results"][0]["times"]) * 1e3


def virtbench_median(label: str, runs: int, workload: str, metric: str) -> float:
    results = Path(tempfile.mkdtemp(prefix="vb-bench-"))
    try:
        run_id = virtbench_run.run(
            [
                "boot",
                "--runtimes",
                label,
                "--workloads",
                workload,
                "--runs",
                str(runs),
                "--warmups",
                "3",
            ],
            results,
        )
        vals = [
            s.value
            for s in Store(results).samples(run_id)
            if s.metric == metric and not s.warmup and s.value
        ]
        return statistics.median(vals)
    finally:
        shutil.rmtree(results, ignore_errors=True)


def rested_median(
    argv: list[str], env: dict[str, str], runs: int, rest: float, layout: cgroups.Layout, name: str
) -> float:
    """hyperfine's median, each run after `rest` s and then, as measure/quiet.py's Primer
    does, a cgroup migration (the shell moving itself into a cgroup of its own) and a
    process started (/bin/true)."""
    controller = "pids" if layout.version != 1 or "pids" in layout.v1 else "freezer"
    d = layout.controller_dir(controller, f"{name}-rest")
    d.mkdir(parents=True, exist_ok=True)
    try:
        script = f"sleep {rest:g}; echo $$ > {d}/cgroup.procs; exec /bin/true"
        return hyperfine_median(argv, env, runs, ["sh", "-c", script])
    finally:
        cgroups.kill_and_remove(d)


def compare(
    label: str, runs: int, paths: Paths, rootfs: Path, rest: float
) -> tuple[float, float, float, float | None, str]:
    """(hyperfine before, after, virtbench, hyperfine from a rest as virtbench's (None
    where each run has its own preparation), the by-hand command) in ms."""
    rid = naming.new_run_id()
    state = RunState(paths.run_dir(rid)).open()
    ctx = RuntimeContext(rid, state, paths, cgroups.Layout.detect(), rootfs=rootfs)
    rt = runtimes.create(label, ctx)
    name = naming.name(rid, "hf")
    if byhand.detached(rt):  # the launch of a sleeper, to "started"
        workload, metric, argv_in = "sleep", "boot.spawn_to_started", ("/bin/vb-sleep",)
    else:
        workload, metric, argv_in = "hello", "boot.spawn_to_exit", hello.argv(name)
    inst, argv, env = byhand.command_line(rt, InstanceSpec(name, argv_in, rootfs))
    prepare = byhand.prepare_command(rt, inst)
    try:
        hf1 = hyperfine_median(argv, env, runs, prepare)
        vb = virtbench_median(label, runs, workload, metric)  # uses our daemon, if any
        hf2 = hyperfine_median(argv, env, runs, prepare)
        rested = None
        if not prepare:
            state.record("cgroup", f"{name}-rest")  # in the ledger first: `clean` finds it
            rested = rested_median(argv, env, runs, rest, ctx.layout, name)
    finally:
        rt.stop(inst)
        rt.close()
        ctx.daemons.close()
        state.close()
    return hf1, hf2, vb, rested, shlex.join(argv)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--runtimes", default="native,crun,runc")
    ap.add_argument("--rest", type=float, default=0.03, help="s before each rested run")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    worst = (0.0, 0.0, "")  # (ratio over its target, ratio, label)
    said = []
    for label in args.runtimes.split(","):
        hf1, hf2, vb, rested, cmd = compare(label, args.runs, paths, art.path, args.rest)
        ratio = vb / statistics.mean([hf1, hf2])
        target = TARGETS.get(label, DEFAULT_TARGET)
        worst = max(worst, (ratio / target, ratio, label))
        said.append(f"boot ratio {label} virtbench/hyperfine = {ratio:.3f} (target <= {target})")
        print(
            f"{label:14} hyperfine {hf1:8.2f} / {hf2:8.2f} ms   virtbench {vb:8.2f} ms   "
            f"ratio {ratio:.3f} (target <= {target})   [{cmd}]",
            flush=True,
        )
        if rested is not None:
            print(
                f"{'':14} hyperfine after {args.rest * 1e3:g} ms at rest, primed as virtbench "
                f"{rested:8.2f} ms: virtbench/that {vb / rested:.3f} (no target)",
                flush=True,
            )
    print("\n".join(said))
    _, ratio, label = worst
    target = TARGETS.get(label, DEFAULT_TARGET)
    print(f"worst ratio virtbench/hyperfine = {ratio:.3f} ({label}; target <= {target})")


if __name__ == "__main__":
    main()
