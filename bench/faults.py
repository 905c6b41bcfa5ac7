"""The fault matrix: per runtime class and fault, what is left on the host after
virtbench's own recovery, and how many stored samples were lost.

Each cell runs `virtbench run` as a user types it (its own state directory and results
store), injects one fault, recovers the way the run's output tells a user to, then
compares the host against a snapshot from before the cell (bench/census.py, which
reads the host without virtbench's clean-up code) and the run's samples against those
stored when the fault struck.

Faults:
  kill9     kill -9 of virtbench mid-density, then `virtbench clean --run`, then
            `virtbench run --resume`
  ctrl-c    SIGINT mid-density (the run stops what it started), then `run --resume`
  daemon    the engine daemon the run started (its ledger's pid) gets SIGKILL mid-boot
            runs; the run goes on without that runtime (docker only: the others have none)
  instance  every process of one running instance gets SIGKILL mid-density; the run
            goes on, resumed if it ended short
  disk-full the results directory (a tmpfs) fills mid-density; the run stops; `clean
            --run` on the full disk; then space is freed and `run --resume`
  overlap   kill -9 mid-density while a second run creates and deletes crun containers
            and `virtbench clean` runs next to both; then clean, resume, and the second
            run finishes
  loadgen   the load generator (a network namespace with its own sshd) lost mid-trial
            while it drives nginx on the run's bridge; the run goes on without it; once it
            answers again `clean --run`, then `run --resume`; what the run made there
            (its directory, its route) counts as left (crun only: one runtime shows it)

"left" counts objects of each kind (container, process, cgroup, mount, netns, link,
tap, chain, daemon-file, state) present after recovery that were not before the cell;
"lost" counts samples stored when the fault struck that are gone after recovery and
whose unit was not measured again whole. Goal: 0 and 0 everywhere.

    .venv/bin/python bench/faults.py [--runtimes crun,runc,...] [--faults kill9,...]
        [--instances 30]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import census
import loadgen
from fault_cells import (
    VIRTBENCH,
    Cell,
    Run,
    clean,
    density_args,
    instances_up,
    lost,
    resume,
    samples,
    status,
    wait_for,
)

RUNTIMES = ("crun", "runc", "runsc", "docker", "podman", "lxc", "nspawn", "qemu")
FAULTS = ("kill9", "ctrl-c", "daemon", "instance", "disk-full", "overlap", "loadgen")
DAEMONS = {"docker": "dockerd"}  # runtimes whose runs start an engine daemon


def fault_kill9(runtime: str, env: dict[str, str], results: Path, n: int, cell: Cell) -> str:
    run = Run(env, *density_args(runtime, n))
    wait_for("5 instances", lambda: len(instances_up(run.rid)) >= 5, run)
    run.p.kill()
    run.finish(60)
    cell.before = samples(results, run.rid)
    clean(env, run.rid, cell)
    return run.rid


def fault_ctrl_c(runtime: str, env: dict[str, str], results: Path, n: int, cell: Cell) -> str:
    run = Run(env, *density_args(runtime, n))
    wait_for("5 instances", lambda: len(instances_up(run.rid)) >= 5, run)
    run.p.send_signal(signal.SIGINT)
    rc = run.finish(600)
    if rc != 130:
        cell.notes.append(f"Ctrl-C: exit {rc}")
    cell.before = samples(results, run.rid)
    return run.rid


def fault_daemon(runtime: str, env: dict[str, str], results: Path, n: int, cell: Cell) -> str:
    run = Run(
        env,
        "boot",
        "--runtimes",
        f"{runtime},crun",
        "--workloads",
        "hello",
        "--runs",
        "10",
        "--warmups",
        "0",
    )
    ledger = Path(env["VIRTBENCH_STATE_DIR"]) / "runs" / run.rid / "ledger.jsonl"

    def booted() -> bool:
        return len([s for s in samples(results, run.rid) if s[1] == runtime and s[5]]) >= 3

    wait_for(f"3 {runtime} boots", booted, run)
    recs = [json.loads(x) for x in ledger.read_text().splitlines()]
    (pid,) = [r["pid"] for r in recs if r["kind"] == "daemon-pid" and r["name"] == DAEMONS[runtime]]
    cell.before = samples(results, run.rid)
    os.kill(pid, signal.SIGKILL)  # its pid: the run (alive) has not reaped it, so it is its
    rc = run.finish()
    if rc != 0:
        cell.notes.append(f"run: exit {rc}")
    return run.rid


def fault_instance(runtime: str, env: dict[str, str], results: Path, n: int, cell: Cell) -> str:
    run = Run(env, *density_args(runtime, n))
    wait_for("5 instances", lambda: len(instances_up(run.rid)) >= 5, run)
    victim = sorted(instances_up(run.rid))[0]
    cell.before = samples(results, run.rid)
    for root in Path("/sys/fs/cgroup").iterdir():  # every process of it, wherever it is
        procs = root / "virtbench" / victim / "cgroup.procs"
        for pid in procs.read_text().split() if procs.exists() else []:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                continue
    rc = run.finish()
    if rc != 0:
        cell.notes.append(f"run: exit {rc}: {run.output.strip().splitlines()[-1][:200]}")
    clean(env, run.rid, cell)
    return run.rid


def fault_disk_full(runtime: str, env: dict[str, str], results: Path, n: int, cell: Cell) -> str:
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "vb-bench-full", str(results)],
        check=True,
    )
    filler = results / "filler"
    try:
        run = Run(env, *density_args(runtime, n))
        wait_for("samples", lambda: len(samples(results, run.rid)) >= 3, run)
        with open(filler, "wb") as fh:  # fill what is left, to the last block
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError:
                pass
        rc = run.finish()
        if rc != 1:
            cell.notes.append(f"run on a full disk: exit {rc}")
        cell.before = samples(results, run.rid)
        clean(env, run.rid, cell)  # on the full disk: clean must work there too
        filler.unlink()
        resume(env, results, run.rid, cell)
        cell.after = samples(results, run.rid)
    finally:
        subprocess.run(["umount", "-l", str(results)], check=False)
    return run.rid


def fault_overlap(runtime: str, env: dict[str, str], results: Path, n: int, cell: Cell) -> str:
    other = Run(
        env, "boot", "--runtimes", "crun", "--workloads", "sleep", "--runs", "150", "--warmups", "0"
    )
    try:
        run = Run(env, *density_args(runtime, n))
        wait_for("5 instances", lambda: len(instances_up(run.rid)) >= 5, run)
        cleans = [
            subprocess.Popen(
                [*VIRTBENCH, "clean"],
                stdout=subprocess.PIPE,
                text=True,
                stderr=subprocess.STDOUT,
                env=env,
            )
        ]
        run.p.kill()
        run.finish(60)
        cell.before = samples(results, run.rid)
        other_before = samples(results, other.rid)
        cleans.append(
            subprocess.Popen(
                [*VIRTBENCH, "clean"],
                stdout=subprocess.PIPE,
                text=True,
                stderr=subprocess.STDOUT,
                env=env,
            )
        )
        for c in cleans:  # one of them may find the other holding the run's lock
            out, _ = c.communicate(timeout=900)
            errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
            held = errors and all("were left alone" in e for e in errors)
            claims = re.search(r"leftovers removed of run\(s\) [^\n]*" + run.rid, out)
            if (c.returncode != 0 and not held) or (held and claims):
                cell.notes.append(
                    f"clean next to a live run: exit {c.returncode}: {out.strip()[-200:]}"
                )
        clean(env, run.rid, cell)
        resume(env, results, run.rid, cell)
    finally:
        rc = other.finish(1800)
    if rc != 0 or status(results, other.rid) != "completed":
        cell.notes.append(f"the other run: exit {rc}, {status(results, other.rid)}")
    gone = lost(other_before, samples(results, other.rid))
    if gone:
        cell.notes.append(f"the other run lost {gone} samples")
    cell.others = [other.rid]
    return run.rid


def fault_loadgen(runtime: str, env: dict[str, str], results: Path, n: int, cell: Cell) -> str:
    del n
    hosts = loadgen.host()
    try:
        nginx = ("throughput", "--workloads", "nginx", "--runtimes", runtime, "--runs", "3")
        run = Run(env, *nginx, *loadgen.flags(hosts))
        wait_for("its route there", lambda: " via " in loadgen.routes(hosts), run)
        cell.before = samples(results, run.rid)
        hosts.kill("h1")
        rc = run.finish()
        if rc != 1:
            cell.notes.append(f"run without its load generator: exit {rc}")
        hosts.start_sshd("h1")
        clean(env, run.rid, cell)
        resume(env, results, run.rid, cell)
        cell.after = samples(results, run.rid)
        cell.left.update(loadgen.left(hosts, run.rid))
    finally:
        hosts.close()
        shutil.rmtree(hosts.root, ignore_errors=True)
    return run.rid


FAULT_FNS = {
    "kill9": fault_kill9,
    "ctrl-c": fault_ctrl_c,
    "daemon": fault_daemon,
    "instance": fault_instance,
    "disk-full": fault_disk_full,
    "overlap": fault_overlap,
    "loadgen": fault_loadgen,
}


def one(fault: str, runtime: str, n: int) -> Cell:
    cell = Cell()
    if fault == "daemon" and runtime not in DAEMONS:
        cell.skipped = "no engine daemon"
        return cell
    if fault == "loadgen" and runtime != "crun":
        cell.skipped = "crun shows it"
        return cell
    base = Path(tempfile.mkdtemp(prefix=f"vb-faults-{fault}-{runtime}-"))
    (base / "results").mkdir()
    env = {
        **os.environ,
        "COLUMNS": "200",
        "VIRTBENCH_STATE_DIR": str(base / "state"),
        "VIRTBENCH_RESULTS": str(base / "results"),
        "VIRTBENCH_MEMORY_SETTLE_S": "2",
    }
    for d in [base, *base.parents]:  # unprivileged containers below the state need to search
        d.chmod(d.stat().st_mode | 0o001)
    results = base / "results"
    before = census.take([])
    rid = FAULT_FNS[fault](runtime, env, results, n, cell)
    rids = [rid, *cell.others]
    found = census.take(rids, base / "state").since(before)  # after clean (or the run's end)
    if fault not in ("disk-full", "loadgen"):  # (resumed by the cell: its tmpfs, its host)
        resume(env, results, rid, cell)
        cell.after = samples(results, rid)
    for kind, names in census.take(rids, base / "state").since(before).items():  # and resume
        found[kind] = found.get(kind, set()) | names
    cell.left += Counter({k: len(v) for k, v in found.items() if v})
    cell.kept = len(cell.before)
    cell.lost = lost(cell.before, cell.after)
    cell.notes += [f"left: {k} {sorted(v)[:4]}" for k, v in found.items() if v]  # what, to explain
    return cell


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtimes", default=",".join(RUNTIMES))
    ap.add_argument("--faults", default=",".join(FAULTS))
    ap.add_argument("--instances", type=int, default=30)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    rts, faults = args.runtimes.split(","), args.faults.split(",")
    cells: dict[tuple[str, str], Cell] = {}
    for fault in faults:
        for rt in rts:
            t0 = time.monotonic()
            try:
                cells[fault, rt] = one(fault, rt, args.instances)
            except Exception as exc:  # a cell that could not be run says so; the rest go on
                cells[fault, rt] = Cell(notes=[f"could not run: {exc}"], left=Counter(error=1))
            c = cells[fault, rt]
            print(f"{fault:9} {rt:7} {c.text()}  ({time.monotonic() - t0:.0f} s)", flush=True)
            for note in c.notes:
                print(f"{'':18}{note}", flush=True)
    print("\nfault matrix: objects left / samples lost of those stored when the fault struck")
    print(f"{'runtime':9}" + "".join(f"{f:>14}" for f in faults))
    for rt in rts:
        row = []
        for fault in faults:
            c = cells[fault, rt]
            row.append("n/a" if c.skipped else f"{sum(c.left.values())} / {c.lost} of {c.kept}")
        print(f"{rt:9}" + "".join(f"{x:>14}" for x in row))
    print("n/a: the runtime starts no engine daemon of its own (daemon); crun shows it (loadgen)")
    bad = [k for k, c in cells.items() if not c.skipped and (c.left or c.lost or c.notes)]
    print(
        f"faults: {'ok' if not bad else f'{len(bad)} cells not clean'} "
        f"({len(cells)} cells, goal 0 left and 0 lost)"
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
