"""Do virtbench's figures survive a skeptic? Three checks on this host, in one run.

1. Independence: the hello `spawn_to_exit` median of each runtime in mixed runs over its
   median measured alone. Alone and mixed runs alternate (alone, mixed, alone, ...,
   alone: 6 mixed runs by default); each mixed run's median is set against the mean of
   the alone runs' medians just before and after it, and the ratios are averaged. This
   host's speed drifts between runs minutes apart, the same for a by-hand loop
   (hyperfine's crun hello median: 8.56-10.06 ms over six runs of 30 within three
   minutes) as for virtbench (runc alone: 26.9, 26.0, 22.2, 20.0, 22.0 ms in five runs
   over two minutes): pooling all alone runs against all mixed runs put that drift into
   the ratio (0.88-0.90 for crun in 3 of 4 tries, runc 0.90 and lxc 0.88 in another),
   a bracket cancels it to first order, as bench/boot_vs_hyperfine.py does with
   hyperfine before and after. Every run's median is printed. Target: within 0.9-1.1,
   or within 0.5 ms where the median is below 5 ms. The mixed runs' order-effect check
   (a predecessor that explains a difference) is printed too.
2. A/A false positives: the alone runs' repetitions split at random into two halves,
   >= 100 times in all, each split compared by `virtbench compare`'s test (the same
   function). Both halves come from one distribution, so every "worse" or "better" is a
   false alarm. Target: at most 0.08 of the splits.
3. Against hyperfine: crun hello by virtbench over hyperfine's median of the same
   command by hand (bench/boot_vs_hyperfine.py), on a quiet host and again with a CPU
   hog (a busy loop this script starts, pinned to CPU 0, and ends by its pid). Target:
   at most 1.1 each.
4. Memory per instance: virtbench's fitted host cost and its kernel side for crun,
   docker and runsc at 100 sleepers over /proc/meminfo read before and after by hand
   (bench/memory_vs_hand.py). Target: within 0.85-1.15 each.

    .venv/bin/python bench/trust.py [--runs 30] [--runtimes native,crun,runc,lxc]
        [--splits 200] [--rounds 6] [--hyperfine-rounds 3]
        [--memory-runtimes crun,docker,runsc] [--memory-instances 100]
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
import memory_vs_hand
import virtbench_run

from virtbench.artifacts import build_minimal_rootfs
from virtbench.paths import Paths
from virtbench.report.compare import compare
from virtbench.report.trust import trust_notes
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


def alone_runs(runtimes: list[str], runs: int) -> dict[str, list[Sample]]:
    return {label: boot_samples(["--runtimes", label, "--runs", str(runs)]) for label in runtimes}


def independence(
    runtimes: list[str], runs: int, rounds: int
) -> tuple[bool, list[dict[str, list[Sample]]]]:
    alone = [alone_runs(runtimes, runs)]
    mixed_runs: list[list[Sample]] = []
    for _ in range(rounds):
        mixed_runs.append(boot_samples(["--runtimes", ",".join(runtimes), "--runs", str(runs)]))
        alone.append(alone_runs(runtimes, runs))
    mixed = [s for run in mixed_runs for s in run]
    ok = True
    for label in runtimes:
        each = [median_of(a[label], label) for a in alone]
        ms = [median_of(run, label) for run in mixed_runs]
        # each mixed run against the alone runs just before and after it: a drift of the
        # host over the minutes of the check cancels (to first order) in each bracket
        brackets = [statistics.mean(each[k : k + 2]) for k in range(len(ms))]
        ratio = statistics.mean(m / b for m, b in zip(ms, brackets, strict=True))
        diff = statistics.mean(m - b for m, b in zip(ms, brackets, strict=True))
        a = statistics.mean(brackets)
        small = a < SMALL_MS
        good = abs(diff) <= ABS_MS if small else RATIO_BAND[0] <= ratio <= RATIO_BAND[1]
        ok &= good
        band = f"|diff| <= {ABS_MS} ms" if small else f"{RATIO_BAND[0]}-{RATIO_BAND[1]}"
        print(
            f"{label:8} alone runs {' / '.join(f'{x:.2f}' for x in each)} ms   mixed runs "
            f"{' / '.join(f'{x:.2f}' for x in ms)} ms   mixed/alone {ratio:.3f}   diff "
            f"{diff:+.3f} ms   ({band}: {'ok' if good else 'MISSED'})",
            flush=True,
        )
    notes = trust_notes(mixed)
    effects = [text for _, text in notes if text.startswith("order effect")]
    print("order effects in the mixed runs: " + ("; ".join(effects) or "none"), flush=True)
    return ok, alone


def aa_rate(alone: list[tuple[str, list[Sample]]], splits: int, seed: int = 1) -> float:
    """Share of random half-splits of one run's repetitions (of one runtime) that
    compare flags."""
    rng = random.Random(seed)
    flagged = total = 0
    per = max(1, -(-splits // len(alone)))
    for _, samples in alone:
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


def hyperfine_ratio(runs: int, rounds: int) -> float:
    """virtbench's crun hello median over hyperfine's, each round hyperfine before and
    after virtbench (bench/boot_vs_hyperfine.py); the ratio of the means over `rounds`
    (one round under a CPU hog varied 1.05-1.16 here)."""
    paths = Paths.from_env()
    art = build_minimal_rootfs(paths.guest_src, paths.cache)
    hfs, vbs = [], []
    for _ in range(rounds):
        hf1, hf2, vb, cmd = boot_vs_hyperfine.compare("crun", runs, paths, art.path)
        hfs += [hf1, hf2]
        vbs.append(vb)
        print(
            f"crun     hyperfine {hf1:.2f} / {hf2:.2f} ms   virtbench {vb:.2f} ms   round ratio "
            f"{vb / statistics.mean([hf1, hf2]):.3f}   [{cmd}]",
            flush=True,
        )
    ratio = statistics.mean(vbs) / statistics.mean(hfs)
    print(f"crun     ratio of the means over {rounds} rounds {ratio:.3f}", flush=True)
    return ratio


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--runtimes", default="native,crun,runc,lxc")
    ap.add_argument("--splits", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=6, help="mixed runs (each between alone runs)")
    ap.add_argument("--hyperfine-rounds", type=int, default=3, help="per condition")
    ap.add_argument("--memory-runtimes", default="crun,docker,runsc")
    ap.add_argument("--memory-instances", type=int, default=100)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    runtimes = args.runtimes.split(",")
    print(f"--- 1. independence: mixed run over alone runs ({args.runs} repetitions each)")
    ok1, alone = independence(runtimes, args.runs, args.rounds)
    print(f"--- 2. A/A: {args.splits} random half-splits of the alone runs' repetitions")
    rate = aa_rate([a for run in alone for a in run.items()], args.splits)
    print(f"A/A false-positive rate {rate:.3f} (target <= {AA_TARGET})", flush=True)
    print("--- 3. virtbench / hyperfine, crun hello: quiet host, then a CPU hog on CPU 0")
    quiet = hyperfine_ratio(args.runs, args.hyperfine_rounds)
    with cpu_hog(0):
        loaded = hyperfine_ratio(args.runs, args.hyperfine_rounds)
    print(
        f"--- 4. memory per instance at {args.memory_instances} sleepers: virtbench's "
        "fitted host cost and kernel side over /proc/meminfo before and after by hand"
    )
    ok4 = memory_vs_hand.check(args.memory_runtimes.split(","), args.memory_instances, 10)
    ok = ok1 and rate <= AA_TARGET and max(quiet, loaded) <= HYPERFINE_TARGET and ok4
    print(
        f"trust: mixed/alone {'ok' if ok1 else 'MISSED'}; A/A rate {rate:.3f}; hyperfine "
        f"ratio {quiet:.3f} quiet, {loaded:.3f} with a CPU hog (target <= "
        f"{HYPERFINE_TARGET}); memory vs hand {'ok' if ok4 else 'MISSED'}: "
        f"{'ok' if ok else 'MISSED'}"
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
