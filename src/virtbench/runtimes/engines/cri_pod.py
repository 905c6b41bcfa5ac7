"""A pod as the `cri` driver (engines/cri.py) hands it to the CRI: what it keeps of each
pod, the pod sandbox's and container's configurations (the CRI's PodSandboxConfig and
ContainerConfig, as crictl reads them from JSON), and the CRI's timestamps on the host's
monotonic clock."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psutil

from virtbench.runtimes.base import Instance
from virtbench.runtimes.engines.base import LABEL

POD_NAMESPACE = "virtbench"


@dataclass
class CriState:
    """What the driver keeps of a pod: its configs' files, the sandbox's and container's
    ids, its shim."""

    pod_config: Path | None = None
    container_config: Path | None = None
    pod_id: str | None = None
    container_id: str | None = None
    shims: list[psutil.Process] = field(default_factory=list)
    logs_saved: bool = False


def monotonic_of(stamp: object) -> int | None:
    """A CRI timestamp (crictl's RFC 3339 with nanoseconds, or ns since the epoch) on
    the monotonic clock; None where there is none."""
    wall = epoch_ns(stamp)
    if wall is None or wall <= 0:
        return None
    return time.monotonic_ns() - (time.time_ns() - wall)


def epoch_ns(stamp: object) -> int | None:
    """ns since the epoch of "2026-12-02T09:35:35.123456789Z" (or of an integer)."""
    if isinstance(stamp, int):
        return stamp
    m = STAMP_RE.fullmatch(str(stamp or ""))
    if m is None:
        return None
    whole = datetime.fromisoformat(m["whole"]).replace(tzinfo=UTC)
    fraction = int((m["fraction"] or "0").ljust(9, "0")[:9])
    return int(whole.timestamp()) * 1_000_000_000 + fraction


STAMP_RE = re.compile(r"(?P<whole>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<fraction>\d+))?Z")


def pod_config(
    run_id: str, cgroup_parent: str, inst: Instance, network: str, logs: Path
) -> dict[str, Any]:
    """The pod sandbox's configuration (the CRI's PodSandboxConfig)."""
    name = inst.spec.name
    config: dict[str, Any] = {
        "metadata": {"name": name, "namespace": POD_NAMESPACE, "uid": name, "attempt": 0},
        "log_directory": str(logs),
        "labels": {LABEL: run_id, "org.virtbench.instance": name},
        "linux": {"cgroup_parent": cgroup_parent},
    }
    if network == "host":  # the node's network (and its hostname: no UTS namespace)
        config["linux"]["security_context"] = {"namespace_options": {"network": 2}}  # NODE
    else:
        config["hostname"] = name
    return config


def container_config(run_id: str, image: str, inst: Instance) -> dict[str, Any]:
    """The instance's container (the CRI's ContainerConfig): its command, binds and
    limits."""
    spec = inst.spec
    resources: dict[str, Any] = {}
    if spec.memory_mib:
        resources["memory_limit_in_bytes"] = spec.memory_mib * 1024 * 1024
    if spec.cpus:
        resources["cpuset_cpus"] = spec.cpus
    return {
        "metadata": {"name": "main"},
        "image": {"image": image},
        "command": list(inst.argv),
        "envs": [{"key": "VIRTBENCH_INSTANCE", "value": spec.name}],
        "mounts": [{"container_path": dest, "host_path": str(host)} for host, dest in inst.binds],
        "log_path": "main.log",
        "labels": {LABEL: run_id, "org.virtbench.instance": spec.name},
        "linux": {"resources": resources},
    }
