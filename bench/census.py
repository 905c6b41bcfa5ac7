"""What is on the host, read independently of virtbench's own clean-up code: a snapshot
before a fault and one after, and their difference by kind.

Kinds: containers (runc, crun and runsc's lists, docker and podman's containers, images
and networks), processes (alive, not zombies), cgroups (anything under a `virtbench`
parent, the parent included), mounts, netns (/run/netns, /run/docker/netns), links and
taps, firewall chains (iptables filter, nat and mangle), daemon files (files of Docker's
data root that name the run) and the run's state directory. A listing that fails is a
kind of its own, `unlisted`, never an empty one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PF_KTHREAD = 0x00200000  # a kernel thread (kworkers come and go, and rename themselves)


@dataclass
class Snapshot:
    """Host objects by kind, each a set of names."""

    objects: dict[str, set[str]] = field(default_factory=dict)
    parents: dict[str, int] = field(default_factory=dict)  # process "pid@start" -> ppid

    def add(self, kind: str, names: Iterable[str]) -> None:
        self.objects.setdefault(kind, set()).update(names)

    def since(self, before: Snapshot) -> dict[str, set[str]]:
        """What this snapshot holds that `before` did not, by kind. A new process below
        one that was there before (other than PID 1 and this one) is that one's: a
        shell's commands on the same host are not a run's leftovers, whereas what a run
        leaves is orphaned to PID 1 (its parent, virtbench, is gone)."""
        new = {k: v - before.objects.get(k, set()) for k, v in self.objects.items()}
        old = {key.split(" ", 1)[0] for key in before.objects.get("process", set())}
        by_pid = {int(key.split("@", 1)[0]): key.split(" ", 1)[0] for key in self.parents}
        if "process" in new:
            new["process"] = {p for p in new["process"] if not self._below(p, old, by_pid)}
        return new

    def _below(self, key: str, old: set[str], by_pid: dict[int, str]) -> bool:
        ppid, seen = self.parents.get(key.split(" ", 1)[0], 0), 0
        while ppid > 1 and seen < 64:
            parent = by_pid.get(ppid)
            if parent is None:
                return False
            if parent in old and ppid != os.getpid():
                return True
            ppid, seen = self.parents.get(parent, 0), seen + 1
        return False


def _out(argv: list[str], snap: Snapshot, what: str) -> str | None:
    try:
        res = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "DOCKER_API_VERSION": "1.41"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        snap.add("unlisted", {f"{what}: {exc}"})
        return None
    if res.returncode != 0:
        snap.add("unlisted", {f"{what}: {(res.stderr or res.stdout).strip()[-200:]}"})
        return None
    return res.stdout


def _containers(snap: Snapshot, run_id: str) -> None:
    mine = f"vb-{run_id}-"
    for binary in ("runc", "crun", "runsc"):
        if shutil.which(binary) is None:
            continue
        for _ in range(20):  # crun's list fails while another container is being made
            probe = Snapshot()
            out = _out([binary, "list", "--format", "json"], probe, f"{binary} list")
            if out is not None:
                ids = [c["id"] for c in json.loads(out or "null") or []]
                snap.add("container", {f"{binary} {i}" for i in ids if i.startswith(mine)})
                break
        else:
            snap.add("unlisted", probe.objects.get("unlisted", set()))
    for engine in ("docker", "podman"):
        if shutil.which(engine) is None:
            continue
        if engine == "docker" and not Path("/var/run/docker.sock").exists():
            continue  # no daemon answers: nothing is held by one
        for what in (["ps", "-a"], ["network", "ls"], ["images"]):
            fmt = "{{.Repository}}:{{.Tag}}" if what == ["images"] else "{{.Name}}"
            fmt = "{{.Names}}" if what[0] == "ps" else fmt
            out = _out([engine, *what, "--format", fmt], snap, f"{engine} {what[0]}")
            names = [n.removeprefix("localhost/") for n in (out or "").split()]
            snap.add("container", {f"{engine} {what[0]} {n}" for n in names if mine in n})


def _cgroups() -> set[str]:
    found = set()
    for root in Path("/sys/fs/cgroup").iterdir():
        parent = root / "virtbench"
        if parent.is_dir():
            found.add(str(parent))
            found.update(str(d) for d in parent.rglob("*") if d.is_dir())
    return found


def _processes(parents: dict[str, int]) -> set[str]:
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        comm, rest = stat.rsplit(")", 1)
        fields = rest.split()  # state, ppid, ..., flags (7th), ..., start time (20th)
        kernel = int(fields[6]) & PF_KTHREAD
        if fields[0] != "Z" and not kernel and int(pid) != os.getpid():  # zombies hold nothing
            found.add(f"{pid}@{fields[19]} {comm.split('(', 1)[1]}")
            parents[f"{pid}@{fields[19]}"] = int(fields[1])
    return found


def _links(snap: Snapshot) -> None:
    out = _out(["ip", "-j", "-d", "link", "show"], snap, "ip link")
    for link in json.loads(out or "[]"):
        kind = link.get("linkinfo", {}).get("info_kind", "")
        snap.add("tap" if kind == "tun" else "link", {link["ifname"]})


def _chains(snap: Snapshot) -> None:
    if shutil.which("iptables") is None:
        return
    for table in ("filter", "nat", "mangle"):
        out = _out(["iptables", "-w", "-t", table, "-S"], snap, f"iptables -t {table}")
        for line in (out or "").splitlines():
            words = line.split()
            if words[:1] in (["-N"], ["-P"]):
                snap.add("chain", {f"{table}/{words[1]}"})


def _docker_files(run_id: str) -> set[str]:
    """Files of Docker's data root naming the run: its image tags, its containers. Not
    network/files/local-kv.db: bolt keeps the bytes of freed pages, so a run's name can
    be read there after every key naming it went (checked with bbolt's `keys`)."""
    root = Path("/var/lib/docker")
    files = [root / "image/overlay2/repositories.json", *root.glob("containers/*/config.v2.json")]
    marker = f"vb-{run_id}-".encode()
    found = set()
    for f in files:
        try:
            if marker in f.read_bytes():
                found.add(str(f))
        except OSError:
            continue
    return found


def take(run_ids: list[str], state_dir: Path | None = None) -> Snapshot:
    """The host now; containers, daemon files and state of the given runs only (other
    kinds host-wide, to be set against a snapshot from before)."""
    snap = Snapshot()
    for rid in run_ids:
        _containers(snap, rid)
        snap.add("daemon-file", _docker_files(rid))
        if state_dir is not None and (state_dir / "runs" / rid).exists():
            snap.add("state", {str(state_dir / "runs" / rid)})
    snap.add("process", _processes(snap.parents))
    snap.add("cgroup", _cgroups())
    mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    snap.add("mount", {line.split()[4] for line in mounts})
    for d in (Path("/run/netns"), Path("/run/docker/netns")):
        if d.is_dir():
            snap.add("netns", {str(d / n) for n in os.listdir(d)})
    _links(snap)
    _chains(snap)
    return snap
