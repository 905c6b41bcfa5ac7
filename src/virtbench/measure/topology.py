"""CPU topology and the isolation experiment's attacker placements.

The worker is pinned to one CPU (a hardware thread). An attacker goes, per placement:
  same-cpu      on the worker's own hardware thread
  smt-sibling   on another hardware thread of the worker's core
  other-cpu     on one hardware thread of another core
  all-other     one attacker on every hardware thread outside the worker's core (S1's
                large-scale case)
A placement the host cannot offer (no SMT sibling on a 2-vCPU VM) is skipped with the
reason, never approximated by another.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SYSFS_CPU = Path("/sys/devices/system/cpu")
Placement = Literal["same-cpu", "smt-sibling", "other-cpu", "all-other"]
PLACEMENTS: tuple[Placement, ...] = ("same-cpu", "smt-sibling", "other-cpu", "all-other")


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def format_cpulist(cpus: list[int] | tuple[int, ...]) -> str:
    """[0, 1, 2, 3, 8, 10, 11] -> '0-3,8,10-11' (parse_cpulist's inverse)."""
    parts: list[str] = []
    for c in sorted(set(cpus)):
        if parts and c == int(parts[-1].rpartition("-")[2]) + 1:
            parts[-1] = f"{parts[-1].partition('-')[0]}-{c}"
        else:
            parts.append(str(c))
    return ",".join(parts)


@dataclass(frozen=True)
class Topology:
    cpus: tuple[int, ...]  # online hardware threads
    siblings: dict[int, tuple[int, ...]]  # cpu -> the hardware threads of its core (incl. it)

    @classmethod
    def detect(cls, sysfs: Path = SYSFS_CPU) -> Topology:
        cpus = tuple(parse_cpulist((sysfs / "online").read_text()))
        siblings = {}
        for cpu in cpus:
            f = sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list"
            try:
                siblings[cpu] = tuple(c for c in parse_cpulist(f.read_text()) if c in cpus)
            except OSError:  # no topology directory: count the thread as its own core
                siblings[cpu] = (cpu,)
        return cls(cpus, siblings)

    def core(self, cpu: int) -> tuple[int, ...]:
        """The hardware threads of `cpu`'s core (itself included)."""
        return self.siblings.get(cpu, (cpu,))

    def default_worker_cpu(self) -> int:
        """The last online CPU: CPU 0 takes most interrupts and housekeeping."""
        return self.cpus[-1]

    def placement(self, name: str, worker: int) -> tuple[list[int], str]:
        """(attacker CPUs, "") for a placement the host offers, ([], why not) otherwise."""
        core = self.core(worker)
        others = [c for c in self.cpus if c not in core]
        if name == "same-cpu":
            return [worker], ""
        if name == "smt-sibling":
            sib = [c for c in core if c != worker]
            if not sib:
                return [], f"cpu {worker} has no SMT sibling online (SMT off or not exposed)"
            return sib[:1], ""
        if name in ("other-cpu", "all-other"):
            if not others:
                return [], f"every online CPU is a thread of cpu {worker}'s core"
            return (others[:1] if name == "other-cpu" else others), ""
        raise ValueError(f"unknown placement {name!r} (allowed: {', '.join(PLACEMENTS)})")
