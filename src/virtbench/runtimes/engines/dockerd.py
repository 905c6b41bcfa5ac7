"""The Docker daemon: a client that speaks its API version, whether one answers, the
dockerd a run starts (its config and command line), and what such a dockerd leaves behind
when it stops (a zombie containerd, mounts, cgroups). The `docker` driver (engines/docker.py)
uses these.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from virtbench.errors import InstanceError
from virtbench.runtimes import traces
from virtbench.runtimes.base import which
from virtbench.runtimes.engines.base import LABEL

if TYPE_CHECKING:
    import docker as docker_sdk

SOCKET = "/var/run/docker.sock"
# dockerd's own containerd; a new dockerd reuses the one this names while its pid exists
CONTAINERD_PIDFILE = Path("/var/run/docker/containerd/containerd.pid")
BASE_URL = f"unix://{SOCKET}"
OCI_PATHS = {"runc": "runc", "crun": "crun", "runsc": "runsc"}
# runsc inside Docker: ptrace works on more hosts than kvm; its own netstack fails on
# some kernels (and then leaks its processes), while host networking inside the
# container's network namespace gives none/host/bridge what they promise; a bind-mounted
# unix socket (the ready probe) needs host-uds.
RUNSC_ARGS = ["--platform=ptrace", "--network=host", "--host-uds=open"]
API_TIMEOUT = 120

# Any version the daemon accepts, for the calls that negotiate the real one.
PROBE_API_VERSION = "1.24"


def client(timeout: int = API_TIMEOUT) -> docker_sdk.DockerClient:
    """A client speaking the daemon's API version. The SDK's own version="auto" asks the
    daemon inside the constructor and leaks its socket when that fails (a daemon still
    starting); here every connection is closed whatever happens."""
    import docker

    probe = docker.APIClient(base_url=BASE_URL, version=PROBE_API_VERSION, timeout=timeout)
    try:
        version = probe.version(api_version=False)["ApiVersion"]
    finally:
        probe.close()
    return docker.DockerClient(base_url=BASE_URL, version=version, timeout=timeout)


def daemon_up() -> bool:
    """True when a Docker daemon answers on the socket."""
    if not os.path.exists(SOCKET):
        return False
    import docker

    c = docker.APIClient(base_url=BASE_URL, version=PROBE_API_VERSION, timeout=5)
    try:
        return bool(c.ping())
    except Exception:
        return False
    finally:
        c.close()


def daemon_config(state_dir: Path) -> dict[str, Any]:
    """daemon.json for a dockerd this run starts: no default bridge, no iptables rules,
    no forwarding -- it changes as little host state as it can, and nothing it runs can
    reach beyond this host. Bridge networks are created per run and published ports go
    through docker-proxy on 127.0.0.1."""
    runtimes: dict[str, Any] = {}
    for name in ("crun", "runsc"):
        path = which(OCI_PATHS[name])
        if path:
            runtimes[name] = {"path": path}
    if "runsc" in runtimes:
        runtimes["runsc"]["runtimeArgs"] = RUNSC_ARGS
    return {
        "storage-driver": "overlay2",
        "exec-opts": ["native.cgroupdriver=cgroupfs"],
        "runtimes": runtimes,
        "bridge": "none",
        "iptables": False,
        "ip-forward": False,
        "ip-masq": False,
        "live-restore": False,
        "log-driver": "json-file",
        "pidfile": str(state_dir / "dockerd.pid"),
    }


def dockerd_argv(config_file: Path) -> list[str]:
    return [which("dockerd") or "dockerd", "--config-file", str(config_file), "-H", BASE_URL]


def dead_containerd() -> list[psutil.Process]:
    """The containerd of a dockerd that died (called only for a dockerd this run started):
    it gets SIGKILL with its parent, but where PID 1 reaps no orphans it stays a zombie,
    and a new dockerd would wait for that pid's socket until its start-up timeout."""
    try:
        pid = int(CONTAINERD_PIDFILE.read_text().strip())
        p = psutil.Process(pid)
        return [p] if p.name() == "containerd" else []
    except (OSError, ValueError, psutil.Error):
        return []


# What a dockerd writes on the host and leaves when it stops (runtimes/traces.py): the
# bind mount of its data root onto itself, the host's netns at run/docker/netns/default,
# one empty file per container it ran in /run/docker/netns.
TRACE_MOUNTS = ("/var/lib/docker", "/run/docker")
TRACE_DIRS = ("/run/docker/netns",)


def remove_engine_leftovers(before: traces.Traces) -> None:
    """After stopping a dockerd we started: the empty `/docker` cgroups it made, and the
    mounts and files it left that were not there before it started."""
    for top in [*Path("/sys/fs/cgroup").glob("*/docker"), Path("/sys/fs/cgroup/docker")]:
        with contextlib.suppress(OSError):
            top.rmdir()
    errors = traces.remove_new(before, TRACE_MOUNTS, TRACE_DIRS, firewall=False)
    if errors:
        raise InstanceError(f"dockerd left {len(errors)} things: {'; '.join(errors[:3])}")


def orphans(api: Any) -> dict[str, Path]:
    """Containers of virtbench's (they carry its run label) that dockerd keeps on disk but
    does not know: a dockerd killed while it removed one deletes its layer and leaves its
    directory, which no later dockerd loads ("failed to load container mount"). Name ->
    directory. The disk is read before dockerd is asked, so a container created meanwhile
    is not taken for one."""
    root = Path(api.info()["DockerRootDir"]) / "containers"
    on_disk: dict[str, tuple[str, Path]] = {}
    for config in root.glob("*/config.v2.json"):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(config.read_text())
            if LABEL in ((data.get("Config") or {}).get("Labels") or {}):
                on_disk[config.parent.name] = (str(data.get("Name", "")).lstrip("/"), config.parent)
    known = {x["Id"] for x in api.containers(all=True)}
    return {name: path for cid, (name, path) in on_disk.items() if cid not in known and name}
