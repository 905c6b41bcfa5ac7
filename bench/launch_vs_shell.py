"""Launch overhead: N background crun sleepers started by virtbench against a plain bash loop.

virtbench's side is what a user runs: `virtbench run SPEC` with one scalability
experiment on crun (worker `boot`, background `sleep`, background network "none", one
run, no warm-ups, `settle_s` 0, a step of N, so all N background instances start in one
go). Its launch phase, read from the store's sample timestamps, runs from the last
sample recorded before it (the hello worker's `boot.spawn_to_exit` at 0 background
instances; the phase so also holds that hello instance's removal, tens of ms) to the
last of the N `scalability.launch` samples. Per instance that is: the memory guard
(/proc/meminfo), the ledger entries, the bundle directory and its config.json, `crun run
-d --bundle B NAME` (crun makes the cgroups), waiting for the instance's ready datagram
before the next one starts, and storing its `scalability.launch` sample in SQLite. The
run's start-up, its host sampler (1 Hz), the measurement points and the teardown are
outside the phase.

The shell side (bench/shell_sleepers.py) starts the same N sleepers, with the same
config.json (virtbench's own, name substituted), by a bash loop: one `mkdir` of all the
bundle directories, then per instance the config written by bash builtins and `crun run
-d --bundle B NAME`; timed from bash's spawn until the loop returned and all N ready
datagrams arrived. The two alternate, shell first and last, `--rounds` virtbench runs in
all; the ratio is the mean of virtbench's times over the mean of the shell's (on a host
with other load, one round can be off by 30% either way: look at the spread printed).
Each timed phase starts after `--settle` seconds of rest. With 5 s, the same side's
phases here differed by up to 50% (virtbench 16.8 against 11.1 s), with 20 s by about
10%: the kernel's deferred work after the previous 1000-instance teardown (network
namespaces, cgroups) is the likely cause, other load on the host another.
The shell's one `mkdir` for all bundles is the cheapest way; a `mkdir` per instance
would add a process each (~1 ms here), which virtbench does not pay.
Also printed, without a target: virtbench's mean `scalability.launch` (spawn -> ready)
against its whole time per instance (the rest is its own bookkeeping), and teardown
(virtbench's `scalability.teardown_per_instance`, the shell's `crun delete` loop).
Target: ratio <= 1.2.

    .venv/bin/python bench/launch_vs_shell.py [--instances 1000] [--rounds 2] [--settle 20]
"""

from __future__ import annotations

import statistics
from pathlib import Path

import shell_sleepers
import virtbench_run
from alternate import alternate, setup

from virtbench.paths import Paths

TARGET = 1.2


def spec_text(n: int) -> str:
    return (
        'name = "launch-vs-shell"\nruntimes = ["crun"]\n'
        # the shell's bundles are the plain ones (shell_sleepers.py): virtbench's too
        '[runtime.crun]\nrootfs = "dir"\nsecurity = "minimal"\n[[experiment]]\n'
        'type = "scalability"\nworker = "boot"\nbackground = "sleep"\n'
        'background_network = "none"\n'
        f"instances = {n}\ninstances_per_benchmark = {n}\n"
        "runs = 1\nwarmups = 0\nsettle_s = 0\nmeasurements_per_point = 1\n"
    )


def virtbench_launch(n: int) -> tuple[float, float, float]:
    """(launch phase s, mean spawn -> ready s, teardown s) of N background sleepers in a
    real `virtbench run`."""
    samples = sorted(virtbench_run.samples_of(spec_text(n)), key=lambda s: s.t)
    launches = [s for s in samples if s.metric == "scalability.launch"]
    if len(launches) != n or any(s.value is None for s in launches):
        errors = [s.error for s in launches if s.error]
        raise SystemExit(f"virtbench started {len(launches)} of {n} instances: {errors[:1]}")
    before = [s.t for s in samples if s.t < launches[0].t and s.metric != "scalability.launch"]
    if not before:
        raise SystemExit("no sample before the launch phase to time it from")
    teardown = [s.value for s in samples if s.metric == "scalability.teardown_per_instance"]
    ready = statistics.mean(s.value or 0 for s in launches) / 1e3
    return launches[-1].t - before[-1], ready, (teardown[0] or 0) * n / 1e3


def shell_launch(paths: Paths, rootfs: Path, n: int) -> tuple[float, float]:
    """(launch s, teardown s) of N sleepers started and removed by bash loops."""
    with shell_sleepers.for_spec(paths, rootfs, n, spec_text(n)) as sleepers:
        launch = sleepers.start()
        return launch, sleepers.stop()


def main() -> None:
    args, paths, rootfs = setup(__doc__, instances=1000, settle=20)
    n = args.instances

    def shell() -> float:
        launch, down = shell_launch(paths, rootfs, n)
        each = f"{launch / n * 1e3:.2f} ms each"
        print(
            f"shell loop   {n} crun sleepers ready in {launch:7.2f} s ({each}; removed in "
            f"{down:.2f} s)",
            flush=True,
        )
        return launch

    def virtbench() -> float:
        launch, ready, down = virtbench_launch(n)
        each = f"{launch / n * 1e3:.2f} ms each, of which spawn->ready {ready * 1e3:.2f} ms"
        print(
            f"virtbench    {n} crun sleepers ready in {launch:7.2f} s ({each}; removed in "
            f"{down:.2f} s)",
            flush=True,
        )
        return launch

    sh, vb = alternate(shell, virtbench, args.rounds, args.settle)
    ratio = statistics.mean(vb) / statistics.mean(sh)
    spread = f"shell {min(sh):.2f}-{max(sh):.2f} s, virtbench {min(vb):.2f}-{max(vb):.2f} s"
    print(f"launch ratio virtbench/shell = {ratio:.3f} (target <= {TARGET}; {spread})", flush=True)


if __name__ == "__main__":
    main()
