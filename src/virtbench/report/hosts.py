"""Runs of several hosts side by side (a fleet run, or runs merged from other machines).

For every host after the first (in the order the runs were given), each measure both hosts
took is compared as `virtbench compare` does: medians, change = median(host) /
median(first host) - 1, a permutation test Holm-corrected over the measures, and a verdict
in the metric's direction. Runtimes are part of the condition, so crun on one host is
compared with crun on the other; a sharded fleet (different runtimes per host) shares no
measure and says so instead of showing an empty table.
"""

from __future__ import annotations

from typing import Any

from virtbench.errors import VirtbenchError
from virtbench.report import compare as cmp
from virtbench.store import Store
from virtbench.store.frame import Frame
from virtbench.store.records import RunRecord


def host_of(run: RunRecord) -> str:
    """The run's host: its fleet label, else the hostname its environment recorded."""
    return run.host or str(run.environment.get("hostname") or "this machine")


def by_host(store: Store, runs: list[RunRecord]) -> dict[str, Frame]:
    """Samples of the runs, grouped by host in the order of the runs."""
    out: dict[str, list[Frame]] = {}
    for r in runs:
        out.setdefault(host_of(r), []).append(store.frame(r.id))
    return {host: Frame.concat(frames) for host, frames in out.items()}


def comparisons(
    store: Store, runs: list[RunRecord], alpha: float = 0.05, min_effect: float = 0.05
) -> list[tuple[str, str, list[cmp.Row] | str]]:
    """(first host, other host, rows -- or why there are none) for every other host; []
    when the runs are all of one host."""
    if len({host_of(r) for r in runs}) < 2:  # before any sample is read
        return []
    groups = by_host(store, runs)
    hosts = list(groups)
    first = hosts[0]
    out: list[tuple[str, str, list[cmp.Row] | str]] = []
    for other in hosts[1:]:
        try:
            rows = cmp.compare(
                groups[first], groups[other], with_runtime=True, alpha=alpha, min_effect=min_effect
            )
        except VirtbenchError:  # e.g. sharded by runtime: nothing measured on both
            rows = []
        shared = [r for r in rows if r.verdict != "missing"]
        out.append((first, other, shared or "no measure was taken on both hosts"))
    return out


def testbed_note(runs: list[RunRecord], first: str, other: str) -> str:
    """What differs between two hosts' testbeds (host/testbed.py), for the reader of their
    comparison: "" when they are one testbed or did not record one."""
    from virtbench.host import testbed

    env = {host_of(r): r.environment for r in reversed(runs)}  # each host's first run
    differ = testbed.differences(env.get(first, {}), env.get(other, {}))
    if not differ:
        return ""
    return f"{other} and {first} are different testbeds: {'; '.join(differ)}"


def named_line(label: str, named: dict[str, Any]) -> str:
    """`uk-nginx = qemu:q35:tcg, kernel /img/nginx.elf (2.1 MiB, sha256 3f2a...)`"""
    files = [
        f"{k} {f['path']} ({f['bytes'] / 2**20:.1f} MiB, sha256 {f['sha256'][:16]})"
        for k, f in named.get("files", {}).items()
    ]
    return ", ".join([f"{label} = {named.get('driver')}", *files])
