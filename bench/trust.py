"""Do virtbench's figures survive a skeptic? Three checks on this host, in one run.

1. Independence: the hello `spawn_to_exit` median of each runtime in one mixed run over
   its median measured alone (each alone run before the mixed one). Target: within
   0.9-1.1, or within 0.5 ms where the median is below 5 ms.
2. A/A false positives: the alone runs' repetitions split at random into two halves,
   >= 100 times in all, each split compared by `virtbench compare`'s test (the same
   function). Both halves come from one distribution, so every "worse" or "better" is a
   false alarm. Target: at most 0.08 of the splits.
3. Against hyperfine: crun hello by virtbench over hyperfine's median of the same
   command by hand (bench/boot_vs_hyperfine.py), on a quiet host and again with a CPU
   hog (a busy loop this script starts, pinned to CPU 0, and ends by its pid). Target:
   at most 1.1 each.

    .venv/bin/python bench/trust.py [--runs 30] [--runtimes native,crun,runc,lxc]
        [--splits 200]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import boot_vs_hyperfine
import virtbench_run

from virtbench.artifacts import build_minimal_rootfs
from virtbench.paths import Paths
from virtbench.report.compare import compare
from virtbench.store import Sample, Store

METRIC = "boot.spawn_to_exit"
RATIO_BAND = (0.9, 1.1)
ABS_MS = 0.5  # below SMALL_MS an absolute band: 0.5 ms of 0.7 is noise, not bias
SMALL_MS = 5.0
AA_TARGET = 0.08
HYPERFINE_TARGET = 1.1


def boot_samples(args: list[str]) -> list[Sample]:
    """Run `virtbench run boot ... --workloads hello` in a scratch store; its samples."""
    results = Path(tempfile.mkdtemp(prefix="vb-trust-"))
    try:
        run_id = virtbench_run.run(["boot", "--workloads", "hello", *args], results)
        store = Store(results)
        try:
            return [s for s in store.samples(run_id) if s.metric == METRIC and not s.warmup]
        finally:
            store.close()
    finally:
        shutil.rmtree(results, ignore_errors=True)


def median_of(samples: list[Sample], runtime: str) -> float:
    return statistics.median(s.value for s in samples if s.runtime == runtime and s.value)


def independence(runtimes: list[str], runs: int) -> tuple[bool, dict[str, list[Sample]]]:
    alone = {}
    for label in runtimes:
        alone[label] = boot_samples(["--runtimes", label, "--runs", str(runs)])
    mixed = boot_samples(["--runtimes", ",".join(runtimes), "--runs", str(runs)])
    ok = True
    for label in runtimes:
        a, m = median_of(alone[label], label), median_of(mixed, label)
        ratio = m / a
        small = a < SMALL_MS
        good = abs(m - a) <= ABS_MS if small else RATIO_BAND[0] <= ratio <= RATIO_BAND[1]
        ok &= good
        band = f"|diff| <= {ABS_MS} ms" if small else f"{RATIO_BAND[0]}-{RATIO_BAND[1]}"
        print(f"{label:8} alone {a:8.3f} ms   mixed {m:8.3f} ms   mixed/alone {ratio:.3f}   "
              f"diff {m - a:+.3f} ms   ({band}: {'ok' if good else 'MISSED'})", flush=True)  # fmt: skip
    return ok, alone


def aa_rate(alone: dict[str, list[Sample]], splits: int, seed: int = 1) -> float:
    """Share of random half-splits of one runtime's repetitions that compare flags."""
    rng = random.Random(seed)
    flagged = total = 0
    per = max(1, splits // len(alone))
    for samples in alone.values():
        reps = sorted({s.repetition for s in samples})
        for _ in range(per):
            half = set(rng.sample(reps, len(reps) // 2))
            a = [s for s in samples if s.repetition in half]
            b = [s for s in samples if s.repetition not in half]
            rows = compare(a, b, with_runtime=True)
            flagged += any(r.verdict in ("worse", "better") for r in rows)
            total += 1
    return flagged / total


@contextlib.contextmanager
def cpu_hog(cpu: int = 0) -> Iterator[int]:
    """A busy loop pinned to `cpu`, ended by its pid on the way out."""
    hog = subprocess.Popen(
        [sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"]
    )
    try:
        yield hog.pid
    finally:
        hog.kill()
        hog.wait()


def hyperfine_ratio(runs: int) -> float:
    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    hf1, hf2, vb, cmd = boot_vs_hyperfine.compare("crun", runs, paths, art.path)
    ratio = vb / statistics.mean([hf1, hf2])
    print(f"crun     hyperfine {hf1:.2f} / {hf2:.2f} ms   virtbench {vb:.2f} ms   ratio {ratio:.3f}"
          f"   [{cmd}]", flush=True)  # fmt: skip
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--runtimes", default="native,crun,runc,lxc")
    ap.add_argument("--splits", type=int, default=200)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    runtimes = args.runtimes.split(",")
    print(f"--- 1. independence: mixed run over alone runs ({args.runs} repetitions each)")
    ok1, alone = independence(runtimes, args.runs)
    print(f"--- 2. A/A: {args.splits} random half-splits of the alone runs' repetitions")
    rate = aa_rate(alone, args.splits)
    print(f"A/A false-positive rate {rate:.3f} (target <= {AA_TARGET})", flush=True)
    print("--- 3. virtbench / hyperfine, crun hello: quiet host, then a CPU hog on CPU 0")
    quiet = hyperfine_ratio(args.runs)
    with cpu_hog(0):
        loaded = hyperfine_ratio(args.runs)
    ok = ok1 and rate <= AA_TARGET and max(quiet, loaded) <= HYPERFINE_TARGET
    print(f"trust: mixed/alone {'ok' if ok1 else 'MISSED'}; A/A rate {rate:.3f}; hyperfine "
          f"ratio {quiet:.3f} quiet, {loaded:.3f} with a CPU hog (target <= "
          f"{HYPERFINE_TARGET}): {'ok' if ok else 'MISSED'}")  # fmt: skip
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
