"""What an engine leaves on the host besides its processes, and removing it again.

A dockerd this run starts bind-mounts its data root onto itself (`/var/lib/docker`),
mounts the host's network namespace at `/run/docker/netns/default` and leaves one
empty file in `/run/docker/netns` per container it ever ran; podman's CNI firewall
plugin adds the iptables chains CNI-FORWARD and CNI-ADMIN (and a jump to them from
FORWARD) the first time a container joins a bridge network. None of that goes when the
daemon stops or the network is removed.

So a driver takes a `snapshot` of the places its engine writes before the engine first
runs, and after it stopped removes whatever is there now and was not then (`remove_new`):
mounts deepest first, files, then chains (the jumps to them, their rules, the chains).
What was there before is never touched, so an engine the host itself runs keeps its own.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from virtbench.host import proc

TABLES = ("filter", "nat")


@dataclass(frozen=True)
class Traces:
    """Mount points under some prefixes, entries of some directories, iptables chains."""

    mounts: frozenset[str]
    files: frozenset[str]
    chains: frozenset[tuple[str, str]]  # (table, chain)


def mount_points() -> list[str]:
    """Every mount point of this mount namespace, as /proc/self/mountinfo spells it."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        out.append(line.split()[4].encode().decode("unicode_escape"))
    return out


def unmount(points: list[str]) -> list[str]:
    """Unmount (lazily) these mount points, deepest first; one message per one that
    resisted (one no longer mounted is done)."""
    errors = []
    for point in sorted(points, key=len, reverse=True):
        res = proc.run(["umount", "-l", point], check=False)
        if res.returncode != 0 and "not mounted" not in res.stderr:
            errors.append(f"mount {point}: {res.brief()}")
    return errors


def chains(table: str) -> list[str] | None:
    """The chains of an iptables table; None without iptables (nothing to leave)."""
    res = proc.run(["iptables", "-w", "-t", table, "-S"], check=False, timeout=30)
    if res.returncode != 0:
        return None
    return [ln.split()[1] for ln in res.stdout.splitlines() if ln.startswith("-N ")]


def snapshot(prefixes: tuple[str, ...], dirs: tuple[str, ...], firewall: bool) -> Traces:
    """What is at those places now."""
    mounts = {m for m in mount_points() if m.startswith(prefixes)}
    files = {str(p) for d in dirs if Path(d).is_dir() for p in Path(d).iterdir()}
    found: set[tuple[str, str]] = set()
    for table in TABLES if firewall else ():
        found |= {(table, c) for c in chains(table) or []}
    return Traces(frozenset(mounts), frozenset(files), frozenset(found))


def jumps_to(rules: list[str], chain: str) -> list[list[str]]:
    """`iptables -S` lines of other chains that jump to `chain`, as the argv that
    deletes each (`-A X ... -j chain` -> `-D X ... -j chain`)."""
    out = []
    for line in rules:
        words = shlex.split(line)
        jumps = "-j" in words and words[words.index("-j") + 1] == chain
        if words[:1] == ["-A"] and words[1] != chain and jumps:
            out.append(["-D", *words[1:]])
    return out


def remove_new(
    before: Traces, prefixes: tuple[str, ...], dirs: tuple[str, ...], firewall: bool
) -> list[str]:
    """Remove what is at those places now and was not in `before`; one message per
    thing that stayed."""
    now = snapshot(prefixes, dirs, firewall)
    errors: list[str] = []
    for mnt in sorted(now.mounts - before.mounts, key=len, reverse=True):
        res = proc.run(["umount", "-l", mnt], check=False)
        if res.returncode != 0 and "not mounted" not in res.stderr:
            errors.append(f"mount {mnt}: {res.brief()}")
    mounted = set(mount_points())
    for name in sorted(now.files - before.files):
        path = Path(name)
        if name in mounted or path.is_dir():
            continue
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            errors.append(f"file {name}: {exc.strerror}")
    for table, chain in sorted(now.chains - before.chains):
        rules = proc.run(["iptables", "-w", "-t", table, "-S"], check=False).stdout.splitlines()
        for argv in jumps_to(rules, chain):
            proc.run(["iptables", "-w", "-t", table, *argv], check=False)
        proc.run(["iptables", "-w", "-t", table, "-F", chain], check=False)
    for table, chain in sorted(now.chains - before.chains):  # once no chain jumps to it
        res = proc.run(["iptables", "-w", "-t", table, "-X", chain], check=False)
        if res.returncode != 0:
            errors.append(f"iptables chain {table}/{chain}: {res.brief()}")
    return errors
