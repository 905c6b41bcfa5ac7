"""Reading a big store: `show`, `compare`, `export` (CSV and NDJSON) and `report` of one
run of 1,000,000 samples, and `show` of one of about 180,000 (`show-180k`), each of six
runtimes and every experiment type (written the way tests/fakerun.py writes a run, and
finished as a run is: its frame made), each timed as a fresh process
with its peak RSS (the median of 3 runs each: this host's speed drifts by a fifth from
minute to minute). Output goes to /dev/null (the report and its plots to files): what
is timed is virtbench reading, not the disk writing. Python's bytecode is made first,
as any second use of the command finds it.

Prints one line per command, `read <command>: <s> s, <MiB> MiB peak (target <= ...)`,
and a summary line `read scale: all within targets` or which are not; exit 1 when any
command fails or misses its target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakerun import fake_run  # noqa: E402, I001 (the repository's tests package)
from virtbench.store import Sample, Store  # noqa: E402

RUNTIMES = {"native": 1.0, "runc": 1.04, "crun": 1.02, "docker": 1.2, "podman": 1.25, "runsc": 1.8}
EXPERIMENTS = ("boot", "density", "throughput", "scalability", "isolation")
TARGETS = {
    "show": 2.0,
    "compare": 3.0,
    "export": 5.0,
    "export-ndjson": 5.0,  # seconds
    "report": 15.0,
    "show-180k": 1.5,
}
MID_SAMPLES = 180_000  # the `show-180k` run's size
PEAK_MIB = 1024
# as a user's shell has it: Python writes the bytecode of what it imports, once
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def per_group(samples: int) -> int:
    """fake_run's per-group count that gives about `samples` samples over RUNTIMES:
    boot (2n + 2) and isolation (4n) grow with it, the rest is fixed."""
    fixed = 2 + 50 + 18 + 15 + 1 + 20 + 48  # boot warm-ups, density, throughput, scalability
    return max(20, samples // len(RUNTIMES) - fixed) // 6


def build(directory: Path, samples: int, run_id: str) -> int:
    """Write the run into a store at `directory`, in one transaction per runtime's batch."""
    store = Store(directory)
    buffered: list[Sample] = []
    direct = store.add_sample

    def add_sample(rid: str, s: Sample) -> None:
        buffered.append(s)
        if len(buffered) >= 50_000:
            flush(rid)

    def flush(rid: str) -> None:
        with store._db.transaction():
            store._insert_samples(rid, buffered)
        buffered.clear()

    store.add_sample = add_sample  # type: ignore[method-assign]
    orig_finish = store.finish_run

    def finish(rid: str, status: str) -> None:
        flush(rid)
        orig_finish(rid, status)

    store.finish_run = finish  # type: ignore[method-assign]
    fake_run(store, run_id, RUNTIMES, EXPERIMENTS, n=per_group(samples), name="big")
    store.add_sample = direct  # type: ignore[method-assign]
    n = store.count_samples(run_id)
    store.close()
    return n


def timed(argv: list[str], out: Path | None = None) -> tuple[float, float, int, str]:
    """(seconds, peak RSS in MiB, exit status, stderr's tail) of `argv` as a fresh process,
    its standard output to `out` (or nowhere)."""
    with open(out or os.devnull, "wb") as sink, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=sink, stderr=err, env=ENV)
        _, status, usage = os.wait4(p.pid, 0)
        took = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read().decode(errors="replace").strip()[-300:]
    return took, usage.ru_maxrss / 1024, p.returncode, tail


def build_store(directory: Path, samples: int) -> None:
    """The store of `samples` samples, built by a process of its own (a child's peak RSS
    counts its parent's at the fork)."""
    t0 = time.perf_counter()
    argv = ["--build", str(directory), "--samples", str(samples)]
    subprocess.run([sys.executable, __file__, *argv], check=True)
    print(
        f"read scale: a store of {samples:,} samples built in "
        f"{time.perf_counter() - t0:.0f} s ({directory})"
    )


def within_target(name: str, argv: list[str], repeat: int) -> bool:
    """Time `argv` `repeat` times and say its median against its target: within it?"""
    runs = [timed(argv) for _ in range(repeat)]  # this host's speed drifts
    took = statistics.median(r[0] for r in runs)
    peak = max(r[1] for r in runs)
    bad = [r for r in runs if not (r[2] == 0 or (name == "compare" and r[2] in (1, 3)))]
    within = took <= TARGETS[name] and peak <= PEAK_MIB
    spread = (
        f" (median of {len(runs)}: {min(r[0] for r in runs):.2f}-{max(r[0] for r in runs):.2f} s)"
        if len(runs) > 1
        else ""
    )
    print(
        f"read {name}: {took:.2f} s{spread}, {peak:.0f} MiB peak (target <= "
        f"{TARGETS[name]:g} s, <= {PEAK_MIB} MiB){'' if within else '  MISSED'}"
        + (f"  exit {bad[0][2]}: {bad[0][3]}" if bad else "")
    )
    return within and not bad


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path, help="build the store in this directory and keep it")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each command (the median)")
    ap.add_argument("--only", help="these commands alone, comma-separated (e.g. show-180k)")
    ap.add_argument("--build", type=Path, help=argparse.SUPPRESS)  # the builder process
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else set(TARGETS)
    if only - set(TARGETS):
        ap.error(f"--only: no command {', '.join(sorted(only - set(TARGETS)))}")
    if args.build:
        build(args.build, args.samples, "big001")
        return 0
    vb = [sys.executable, "-m", "virtbench"]
    with tempfile.TemporaryDirectory(prefix="vb-read-") as tmp:
        where = args.keep or Path(tmp) / "results"
        mid = Path(tmp) / "mid"
        stores = ((where, args.samples, only - {"show-180k"}), (mid, MID_SAMPLES, {"show-180k"}))
        for directory, samples, readers in stores:
            if only & readers:  # else no command asked for it
                build_store(directory, samples)
        subprocess.run([*vb, "--help"], stdout=subprocess.DEVNULL, check=True, env=ENV)
        store = ["--results", str(where)]
        commands = {
            "show": [*vb, "show", "big001", *store],
            "compare": [*vb, "compare", "big001", "--runtimes", "native,crun", *store],
            "export": [*vb, "export", "big001", "--format", "csv", *store],
            "export-ndjson": [*vb, "export", "big001", "--format", "ndjson", *store],
            "report": [*vb, "report", "big001", "-o", str(Path(tmp) / "report.html"), *store],
            "show-180k": [*vb, "show", "big001", "--results", str(mid)],
        }
        missed = [
            name
            for name, argv in commands.items()
            if name in only and not within_target(name, argv, args.repeat)
        ]
    print(
        "read scale: all within targets"
        if not missed
        else f"read scale: not within targets: {', '.join(missed)}"
    )
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
