"""What the benchmarks of virtbench against a shell loop share (launch_vs_shell.py,
burst_vs_xargs.py, tti_vs_shell.py): their command line, the host they need, and the
order of their measurements: the shell first and last, virtbench between, each after a
rest, so that neither side always follows the other."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from virtbench.artifacts import build_minimal_rootfs
from virtbench.paths import Paths


def setup(doc: str, instances: int, settle: float) -> tuple[argparse.Namespace, Paths, Path]:
    """The arguments (--instances, --rounds, --settle, defaults given), the paths and the
    minimal artifact's rootfs; exits unless run as root."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--instances", type=int, default=instances)
    ap.add_argument("--rounds", type=int, default=2, help="virtbench runs (shell: one more)")
    ap.add_argument("--settle", type=float, default=settle, help="rest before each side (s)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    paths = Paths.from_env()
    return args, paths, build_minimal_rootfs(paths.guest_src, paths.cache).path


def alternate(
    shell: Callable[[], float], virtbench: Callable[[], float], rounds: int, settle: float
) -> tuple[list[float], list[float]]:
    """(the shell's figures, virtbench's): the shell, then `rounds` times virtbench and the
    shell again, each after `settle` seconds of rest."""

    def rested(side: Callable[[], float]) -> float:
        time.sleep(settle)
        return side()

    sh, vb = [rested(shell)], []
    for _ in range(rounds):
        vb.append(rested(virtbench))
        sh.append(rested(shell))
    return sh, vb
