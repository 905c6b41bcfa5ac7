"""Attackers: the misbehaving neighbours of the isolation experiment.

Each runs in an instance of the same runtime as the worker, pinned to the CPU its
placement names, signals ready over the probe (vb-ready), then loops until stopped.
S1's attackers are cpu, memory, open, read, write, stat and fork; disk, network and
mempressure add the other resources a neighbour can exhaust. Files for the syscall loops
live on tmpfs (a memfd) or in the page cache (the artifact's own binary), so none of
them touches a disk; `disk` does, on purpose, in the instance's data directory.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Attacker:
    name: str
    description: str
    command: tuple[str, ...]  # inside the instance, run after the ready datagram
    data: bool = False  # needs a data directory on disk at /data
    needs: tuple[str, ...] = ()  # workloads whose host binaries the artifact must carry
    memory_mib: int = 0  # what one instance of it holds (the isolation memory guard)


ATTACK = "/bin/vb-attack"
ATTACKERS = {
    a.name: a
    for a in (
        Attacker("cpu", "primality test of 2..1e9, repeated (S1)", (ATTACK, "cpu")),
        Attacker(
            "memory",
            "STREAM kernels over 3 x 80 MB, repeated (S1)",
            (ATTACK, "memory"),
            memory_mib=240,
        ),
        Attacker("open", "open()+close() of a cached file (S1)", (ATTACK, "open", ATTACK)),
        Attacker("read", "4 KiB pread() from a file on tmpfs (S1)", (ATTACK, "read")),
        Attacker("write", "4 KiB pwrite() to a file on tmpfs (S1)", (ATTACK, "write")),
        Attacker("stat", "stat() of a cached file (S1)", (ATTACK, "stat", ATTACK)),
        Attacker("fork", "fork()+_exit()+wait(), two processes at most (S1)", (ATTACK, "fork")),
        Attacker(
            "mempressure",
            "map, touch and unmap 256 MiB, repeated",
            (ATTACK, "mempressure"),
            memory_mib=256,
        ),
        Attacker("network", "TCP bulk transfer over the instance's loopback", (ATTACK, "net")),
        Attacker(
            "disk",
            "fio 4 KiB random read/write, O_DIRECT, on the data directory",
            (
                "/usr/bin/fio",
                "--name=vb-attack",
                "--directory=/data",
                "--rw=randrw",
                "--bs=4k",
                "--direct=1",
                "--ioengine=psync",
                "--size=256M",
                "--time_based",
                "--runtime=86400",
                "--output-format=terse",
            ),
            data=True,
            needs=("fio",),
            memory_mib=256,  # the page cache of its file, at most
        ),
    )
}
S1_ATTACKERS = ("cpu", "memory", "open", "read", "write", "stat", "fork")


PREFIX = "attacker "  # an attacker's instances are named so among an experiment's workloads


def workload_name(name: str) -> str:
    """The name the attacker `name`'s instances go by among an experiment's workloads."""
    return PREFIX + name


def of_workload(workload: str) -> Attacker | None:
    """The attacker whose instances `workload` names (None: a workload, not an attacker)."""
    if not workload.startswith(PREFIX):
        return None
    return ATTACKERS.get(workload.removeprefix(PREFIX))


def argv(name: str, instance: str) -> tuple[str, ...]:
    return ("/bin/vb-ready", "{probe}", instance, *ATTACKERS[name].command)
