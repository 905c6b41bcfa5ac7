"""The per-trial cost of running a client on a load generator: one command through the
run's SSH connection (loadgen/ssh.py), against the same command run here.

The load generator is a network namespace with its own sshd on this machine (the fleet
and load-generator tests' hosts: tests/integration/fleethosts.py), reached over a veth
and a bridge: what is measured is ssh's own work (a session on the master's connection,
the remote shell, the CPU counters read around the client: loadgen/cpu.py), not a
network. Both sides run `true` `--trials` times, alternating; the overhead is the
difference of the medians. Target: under 50 ms per trial.

sshd runs every command through the account's login shell, which reads its rc files
first (bash, started by sshd, reads ~/.bashrc): their cost is the account's, paid on
every command. The target is met with an account whose shell starts plainly (root's home
an empty directory for the load generator's sshd); the figure with this machine's own
root rc files is printed beside it.

    .venv/bin/python bench/loadgen_overhead.py [--trials 50]
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import statistics
import sys
import time

import loadgen
from tests.integration.fleethosts import Hosts, available

from virtbench.host import proc
from virtbench.loadgen import cpu
from virtbench.loadgen.ssh import ssh_argv

TARGET_MS = 50.0


def timed(argv: list[str]) -> float:
    """ms from start to exit of `argv`, which must succeed."""
    t0 = time.perf_counter()
    proc.run(argv, timeout=60)
    return (time.perf_counter() - t0) * 1e3


def measure(hosts: Hosts, trials: int) -> tuple[list[float], list[float]]:
    options, dest = loadgen.ssh_options(hosts), loadgen.destination(hosts)
    sock = hosts.root / "cm.sock"
    master = proc.spawn(ssh_argv(dest, options, "-S", str(sock), "-M", "-N"))
    try:
        check = ssh_argv(dest, options, "-S", str(sock), "-O", "check")
        while proc.run(check, check=False).returncode:
            time.sleep(0.1)
        client = [*ssh_argv(dest, options, "-S", str(sock), "-o", "ControlMaster=no"), "--"]
        wrapped = [*client, shlex.join(["sh", "-c", cpu.WRAPPER, "sh", "true"])]
        local, remote = [], []
        for _ in range(trials):
            local.append(timed(["sh", "-c", "true"]))
            remote.append(timed(wrapped))
        return local, remote
    finally:
        master.terminate()
        proc.wait(master, 10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    args = ap.parse_args()
    if (why := available()) is not None:
        print(f"loadgen overhead: cannot make a load-generator host here: {why}")
        return 1
    got = {}
    for plain in (True, False):
        hosts = loadgen.host(plain)
        try:
            local, remote = measure(hosts, args.trials)
        finally:
            hosts.close()
            shutil.rmtree(hosts.root, ignore_errors=True)
        got[plain] = statistics.median(remote) - statistics.median(local), statistics.median(remote)
    overhead, there = got[True]
    with_rc, _ = got[False]
    print(
        f"loadgen per-trial overhead: {overhead:.1f} ms (a client command through the "
        f"connection {there:.1f} ms against one here; medians of {args.trials}; the "
        f"account's shell without rc files); target < {TARGET_MS:g} ms: "
        f"{'met' if overhead < TARGET_MS else 'NOT met'}"
    )
    print(
        f"  with this machine's root rc files (its shell's start on every command): "
        f"{with_rc:.1f} ms"
    )
    return 0 if overhead < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
