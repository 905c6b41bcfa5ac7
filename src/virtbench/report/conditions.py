"""The conditions a runtime's figures were taken under, as its samples' params record
them (an OCI bundle's storage and confinement, a VM's firmware), shown beside the figures,
and a warning when two runtimes compared differ in them: their difference then mixes the
runtime with its conditions."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from virtbench.store.frame import Frame, as_frame
from virtbench.store.records import Sample

# what a runtime's conditions() records (runtimes/oci/base.py, oci/security.py, vm/qemu.py,
# an engine's cgroup driver: engines/docker.py),
# and where a serving workload's client ran (experiments/worker.py, loadgen/)
KEYS = ("rootfs", "security", "seccomp", "lsm", "firmware", "cgroups")
CLIENT = ("client_host", "client_path", "client_cpus")
COMPARED = ("rootfs", "security", "firmware")  # a difference in these is warned of


def of_runtimes(samples: Frame | Iterable[Sample]) -> dict[str, dict[str, str]]:
    """Per runtime, the conditions its samples record (each key's first value): read
    once per distinct (runtime, params) pair, not per sample."""
    frame = as_frame(samples)
    if not len(frame):
        return {}
    pairs = np.stack([frame.codes["runtime"], frame.codes["params"]], axis=1)
    _, first = np.unique(pairs, axis=0, return_index=True)
    out: dict[str, dict[str, str]] = {}
    for runtime_code, params_code in pairs[np.sort(first)]:
        params = frame.params_of(int(params_code))
        got = {k: str(params[k]) for k in KEYS + CLIENT if params.get(k) is not None}
        if got:
            mine = out.setdefault(frame.labels["runtime"][runtime_code], {})
            for k, v in got.items():
                mine.setdefault(k, v)
    return out


def line(runtime: str, conditions: dict[str, str]) -> str:
    """`crun: rootfs overlay (...), security engine-default (seccomp ..., lsm none)`"""
    parts = []
    if "rootfs" in conditions:
        parts.append(f"rootfs {conditions['rootfs']}")
    if "security" in conditions:
        detail = [f"{k} {conditions[k]}" for k in ("seccomp", "lsm") if k in conditions]
        parts.append(
            f"security {conditions['security']}" + (f" ({', '.join(detail)})" if detail else "")
        )
    if "firmware" in conditions:
        parts.append(f"firmware {conditions['firmware']}")
    if "cgroups" in conditions:
        parts.append(f"cgroups {conditions['cgroups']}")
    if "client_host" in conditions:
        path = conditions.get("client_path", "")
        parts.append(f"client on the load generator {conditions['client_host']} ({path})")
    elif "client_cpus" in conditions:
        cpus = conditions["client_cpus"]
        parts.append(f"client on the host under test (CPUs {cpus})")
    return f"{runtime}: " + ", ".join(parts)


def differences(a: dict[str, str], b: dict[str, str]) -> list[str]:
    """The compared conditions both record and differ in, by kind (their first word:
    "overlay" for virtbench's overlay and an engine's overlay2 driver alike)."""
    return [k for k in COMPARED if k in a and k in b and kind(a[k]) != kind(b[k])]


def kind(value: str) -> str:
    return value.split()[0] if value.split() else value


def warning(name_a: str, a: dict[str, str], name_b: str, b: dict[str, str]) -> str | None:
    """One line when two compared runtimes' conditions differ, else None."""
    keys = differences(a, b)
    if not keys:
        return None
    said = "; ".join(f"{k}: {kind(a[k])} vs {kind(b[k])}" for k in keys)
    return (
        f"{name_a} and {name_b} ran under different conditions ({said}): a difference "
        "between them is the runtime's and its conditions' together"
    )


def shown(samples: Frame | Iterable[Sample]) -> list[tuple[str, str]]:
    """(level, line) for `show`: each runtime's conditions, then a warning per pair of
    runtimes that differ in them."""
    conds = of_runtimes(samples)
    out = [("conditions", line(r, c)) for r, c in conds.items()]
    names = list(conds)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if (said := warning(a, conds[a], b, conds[b])) is not None:
                out.append(("warning", said))
    return out
