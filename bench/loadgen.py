"""A load generator for the benches: a network namespace with its own sshd on this
machine (the tests' hosts: tests/integration/fleethosts.py), the `virtbench run` flags
that name it, and what a run left there."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' namespace hosts

from tests.integration.fleethosts import Hosts

from virtbench.loadgen.remote import clients_dir


def host(plain: bool = True) -> Hosts:
    """One started host h1; `plain`: its root account's shell starts without this
    machine's rc files. (Its directory goes with `close()`'s caller: a temporary one.)"""
    return Hosts(Path(tempfile.mkdtemp(prefix="vb-bench-lg-")), 1, plain_home=plain).start()


def destination(hosts: Hosts) -> str:
    return f"root@{hosts.addr('h1')}"


def ssh_options(hosts: Hosts) -> list[str]:
    """The ssh `-o` options that reach h1."""
    return [
        f"IdentityFile={hosts.key}",
        "StrictHostKeyChecking=no",
        "UserKnownHostsFile=/dev/null",
        "LogLevel=ERROR",
    ]


def flags(hosts: Hosts) -> list[str]:
    """`--loadgen` and its ssh options for `hosts`' h1."""
    options = (f"--ssh-option={o}" for o in ssh_options(hosts))
    return ["--loadgen", destination(hosts), *options]


def routes(hosts: Hosts) -> str:
    """h1's routing table."""
    return subprocess.run(
        ["ip", "-n", hosts.ns("h1"), "route"], capture_output=True, text=True, check=True
    ).stdout


def left(hosts: Hosts, rid: str) -> Counter[str]:
    """What run `rid` left on the load generator: its route, its clients' directory."""
    found: Counter[str] = Counter()
    if " via " in routes(hosts):
        found["loadgen-route"] += 1
    if Path(clients_dir(rid)).exists():
        found["loadgen-dir"] += 1
    return found
