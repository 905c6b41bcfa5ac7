"""Time to interactive one by one: virtbench's `tti` (sequential) on crun against a shell
loop of `crun run -d` and `crun exec` on the same bundles.

virtbench's side is what a user runs: `virtbench run SPEC` with one tti experiment on
crun, `sequential = N` and nothing staggered or at once (network "none", one run,
`settle_s` 0): per instance, prepared untimed, then after the quiet wait its create
call (`crun run -d`), its ready datagram, and `crun exec NAME /bin/vb-hello` with its
line read back; `tti.interactive@seq` is the create call -> that exec's exit seen.
Each instance is removed before the next is prepared.

The shell's side (bench/shell_sleepers.py `tti`): the same N sleepers with virtbench's
own config.json (configs written first, untimed), then a bash loop: per instance
`crun run -d --bundle B NAME`, `crun exec NAME /bin/vb-hello` (its output to a file,
checked after the loop), timed around the two by bash's $EPOCHREALTIME, then
`crun delete --force NAME` (untimed) before the next. The shell does not wait for the
ready datagram (nothing tells a shell when to): its exec follows `run -d` at once.

The two alternate, shell first and last, `--rounds` virtbench runs in all, each after
`--settle` seconds of rest; the ratio is the mean of virtbench's medians over the mean
of the shell's. Target: <= 1.05.

    .venv/bin/python bench/tti_vs_shell.py [--instances 20] [--rounds 2] [--settle 5]
"""

from __future__ import annotations

import statistics
from pathlib import Path

import shell_sleepers
import virtbench_run
from alternate import alternate, setup

from virtbench.paths import Paths

TARGET = 1.05


def spec_text(n: int) -> str:
    # the shell's bundles are the plain ones (shell_sleepers.py): virtbench's too
    return (
        'name = "tti-vs-shell"\nruntimes = ["crun"]\n[runtime.crun]\nrootfs = "dir"\n'
        'security = "minimal"\n[instance]\nnetwork = "none"\n'
        f'[[experiment]]\ntype = "tti"\nsequential = {n}\nstaggered = 0\nlevels = []\n'
        "runs = 1\nsettle_s = 0\n"
    )


def virtbench_tti(n: int) -> dict[str, list[float]]:
    """Each instance's ms from its create call, per phase (`tti.<phase>@seq`), in a real
    `virtbench run`."""
    samples = virtbench_run.samples_of(spec_text(n))
    phases: dict[str, list[float]] = {}
    for x in samples:
        if x.metric.endswith("@seq"):
            if x.value is None:
                raise SystemExit(f"virtbench's tti: {x.metric} failed: {x.error}")
            phases.setdefault(x.metric.split(".")[1].split("@")[0], []).append(x.value)
    if len(phases.get("interactive", [])) != n:
        raise SystemExit(f"virtbench's tti: {len(phases.get('interactive', []))} of {n}")
    return phases


def shell_tti(paths: Paths, rootfs: Path, n: int) -> list[float]:
    with shell_sleepers.for_spec(paths, rootfs, n, spec_text(n)) as sleepers:
        return [t * 1e3 for t in sleepers.tti()]


def main() -> None:
    args, paths, rootfs = setup(__doc__, instances=20, settle=5)
    n = args.instances

    def shell() -> float:
        times = shell_tti(paths, rootfs, n)
        p50 = statistics.median(times)
        print(
            f"shell loop  {n} crun sleepers one by one: run -d + exec median {p50:7.2f} ms "
            f"(min {min(times):.2f}, max {max(times):.2f})",
            flush=True,
        )
        return p50

    def virtbench() -> float:
        phases = virtbench_tti(n)
        p50 = statistics.median(phases["interactive"])
        each = ", ".join(
            f"{k} {statistics.median(v):.2f}"
            for k, v in phases.items()
            if k in ("launched", "ready", "first_command")
        )
        print(
            f"virtbench   {n} crun sleepers one by one: to interactive median {p50:7.2f} ms "
            f"(min {min(phases['interactive']):.2f}, max {max(phases['interactive']):.2f}; "
            f"medians: {each})",
            flush=True,
        )
        return p50

    sh, vb = alternate(shell, virtbench, args.rounds, args.settle)
    ratio = statistics.mean(vb) / statistics.mean(sh)
    spread = f"shell {min(sh):.2f}-{max(sh):.2f} ms, virtbench {min(vb):.2f}-{max(vb):.2f} ms"
    print(
        f"tti ratio virtbench/shell one by one = {ratio:.3f} (target <= {TARGET}; {spread})",
        flush=True,
    )


if __name__ == "__main__":
    main()
