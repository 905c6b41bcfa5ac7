"""`virtbench site` over a store of 1,000 runs and 1,000,000 samples: 4 testbeds x 10
entries x 25 runs, each run five runtimes' boots (about 1,000 samples, written the way
tests/fakerun.py writes a run and finished as a run is: its frame made). Timed as fresh
processes: the first build (every run's report, JSON and verdicts against the run before,
on every CPU), a second build of the unchanged store (it must write nothing), and a build
after one more run (it must make that run's files and no other run's).

Prints one line per build, `site <build>: <s> s ...` with its target, and a summary line
`site scale: all within targets` or which are not; exit 1 when a build fails, writes what
it must not, or misses its target.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from read_scale import ENV, timed  # the same fresh-process timing as the read benchmark

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakerun import ENVIRONMENT, fake_run  # noqa: E402, I001 (the repository's tests)
from virtbench.store import Sample, Store  # noqa: E402

RUNTIMES = {"native": 1.0, "runc": 1.04, "crun": 1.02, "docker": 1.2, "runsc": 1.8}
TESTBEDS, ENTRIES = 4, 10
RUNS = int(os.environ.get("VB_SITE_RUNS", "25"))  # per entry (fewer: a quick try of the bench)
TARGETS = {"first": 60.0, "unchanged": 5.0, "one more run": 10.0}  # seconds


def _batched(store: Store) -> None:
    """The store inserts a run's samples in one transaction at its finish (a real run
    commits each sample: that is the run's cost, not the site's)."""
    buffered: list[Sample] = []
    finish = store.finish_run

    def add_sample(rid: str, s: Sample) -> None:
        buffered.append(s)

    def finished(rid: str, status: str) -> None:
        with store._db.transaction():
            store._insert_samples(rid, buffered)
        buffered.clear()
        finish(rid, status)

    store.add_sample = add_sample  # type: ignore[method-assign]
    store.finish_run = finished  # type: ignore[method-assign]


def add_run(store: Store, testbed: int, entry: int, i: int, n: int) -> str:
    rid = f"t{testbed}e{entry}r{i:03d}"
    fake_run(store, rid, RUNTIMES, ("boot",), n=n, seed=i, name=f"entry-{entry}")
    env = {**ENVIRONMENT, "cpu_model": f"Bench CPU {testbed}", "runtimes": {}}
    store.set_environment(rid, env)
    return rid


def per_group(samples: int) -> int:
    """fake_run's n that gives about `samples` samples over all runs: boot writes 2n + 2
    per runtime."""
    return max(5, (samples // (TESTBEDS * ENTRIES * RUNS) // len(RUNTIMES) - 2) // 2)


def build(directory: Path, samples: int) -> int:
    store = Store(directory)
    _batched(store)
    n = per_group(samples)
    for i in range(RUNS):
        for t in range(TESTBEDS):
            for e in range(ENTRIES):
                add_run(store, t, e, i, n)
    total = int(store._db.rows("SELECT COUNT(*) AS n FROM samples", ())[0]["n"])
    store.close()
    return total


def _said(tail: str, what: str) -> int:
    """The count the command said it `what` ("made", "wrote"); -1 when it did not say."""
    m = re.search(rf"{what}\s+(\d+)\s", tail)
    return int(m.group(1)) if m else -1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, help="build the store and site here and keep them")
    ap.add_argument("--build", type=Path, help=argparse.SUPPRESS)  # the builder process
    args = ap.parse_args()
    if args.build:
        print(build(args.build, args.samples))
        return 0
    with tempfile.TemporaryDirectory(prefix="vb-site-") as tmp:
        where = args.keep or Path(tmp)
        t0 = time.perf_counter()
        made = subprocess.run(
            [
                sys.executable,
                __file__,
                "--build",
                str(where / "results"),
                "--samples",
                str(args.samples),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        runs = TESTBEDS * ENTRIES * RUNS
        print(
            f"site scale: a store of {runs:,} runs and {int(made.stdout):,} samples built in "
            f"{time.perf_counter() - t0:.0f} s ({where})"
        )
        return _builds(where, per_group(args.samples))


def _builds(where: Path, n: int) -> int:
    vb = [
        sys.executable,
        "-m",
        "virtbench",
        "site",
        str(where / "site"),
        "--results",
        str(where / "results"),
    ]
    cpus = len(os.sched_getaffinity(0))
    subprocess.run(
        [sys.executable, "-m", "virtbench", "--help"],
        stdout=subprocess.DEVNULL,
        check=True,
        env=ENV,
    )
    missed = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    took, peak, rc, tail = timed(vb)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    runs = TESTBEDS * ENTRIES * RUNS
    ok = rc == 0 and _said(tail, "made") == runs
    print(
        f"site first build: {took:.1f} s for {runs:,} runs on {cpus} CPUs ({cpu / runs:.2f} "
        f"CPU-s a run, {cpu:.0f} in all), {peak:.0f} MiB peak a process; target < "
        f"{TARGETS['first']:.0f} s: {'met' if ok and took < TARGETS['first'] else 'not met'}"
    )
    if not ok or took >= TARGETS["first"]:
        missed.append(f"first ({tail[-200:] if rc else f'{took:.0f} s'})")
    took, peak, rc, tail = timed(vb)
    ok = rc == 0 and _said(tail, "made") == 0 and _said(tail, "wrote") == 0
    print(
        f"site unchanged store: {took:.1f} s, made 0 runs' files and wrote 0 files: "
        f"{'yes' if ok else 'no: ' + tail[-200:]}; target < {TARGETS['unchanged']:.0f} s"
    )
    if not ok or took >= TARGETS["unchanged"]:
        missed.append("unchanged")
    missed += _one_more(where, vb, n)
    print("site scale: " + ("all within targets" if not missed else "missed " + ", ".join(missed)))
    return 1 if missed else 0


def _one_more(where: Path, vb: list[str], n: int) -> list[str]:
    store = Store(where / "results")
    add_run(store, 0, 0, RUNS, n)
    store.close()
    took, _, rc, tail = timed(vb)
    ok = rc == 0 and _said(tail, "made") == 1
    print(
        f"site one more run: {took:.1f} s, {tail.split(': ', 1)[-1].split(' (')[0]}; "
        f"target < {TARGETS['one more run']:.0f} s"
    )
    return [] if ok and took < TARGETS["one more run"] else ["one more run"]


if __name__ == "__main__":
    sys.exit(main())
