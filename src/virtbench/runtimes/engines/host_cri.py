"""The host's own containerd, where it serves the CRI: the `cri` driver (engines/cri.py)
uses it as it is configured, its handlers, CNI network and cgroup driver, rather than
starting one of its own, as a node's pods run.

Which containerd: `VIRTBENCH_CRI_ENDPOINT` (a socket path, or `own` for the run's own
always), else the host's default socket. It is used where it answers the CRI with its
runtime and its network ready and places pods through cgroupfs (a pod's cgroup under the
instance's, where its figures are read); otherwise the run starts its own and says why.
A containerd that answers without the CRI (Docker's own, which disables it) is not one.

What a run puts in it carries the run's id: its pods are named `vb-<run>-<n>`, its two
images `localhost/vb-<run>-...`; `virtbench clean` lists both (`list_objects`) and
removes those of runs no longer alive.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from virtbench.errors import ListingError
from virtbench.host import proc
from virtbench.runtimes.base import which
from virtbench.runtimes.leftovers import listing

ENDPOINT_ENV = "VIRTBENCH_CRI_ENDPOINT"
HOST_SOCKET = Path("/run/containerd/containerd.sock")
OWN = "own"
NO_CRI = "unknown service runtime.v1"  # a containerd whose CRI plugin is off
IMPORTED = "localhost/"  # where the images a run imports are named (engines/cri.py)


@dataclass(frozen=True)
class HostCri:
    """The host's containerd as its CRI describes itself: its socket, version, handlers
    (name -> whether it places pods through systemd), and why it cannot be used ("" if
    it can)."""

    socket: Path
    version: str = ""
    handlers: dict[str, bool] = field(default_factory=dict)
    problem: str = ""


def socket() -> Path | None:
    """The containerd socket to look at; None where `VIRTBENCH_CRI_ENDPOINT=own`."""
    chosen = os.environ.get(ENDPOINT_ENV, "").strip()
    if chosen == OWN:
        return None
    return Path(chosen.removeprefix("unix://")) if chosen else HOST_SOCKET


def crictl(sock: Path, *args: str) -> list[str]:
    """crictl's argv for `args` against `sock`."""
    endpoint = f"unix://{sock}"
    binary = which("crictl") or "crictl"
    return [binary, "--runtime-endpoint", endpoint, "--image-endpoint", endpoint, *args]


@cache
def find() -> HostCri | None:
    """The host's containerd where one answers on `socket()` with the CRI (usable or,
    in `problem`, why not); None where there is none, or it serves no CRI."""
    sock = socket()
    if sock is None or not sock.is_socket() or which("crictl") is None:
        return None
    res = proc.run(crictl(sock, "info", "-o", "json"), check=False, timeout=30)
    if res.returncode != 0:
        if NO_CRI in res.stderr:
            return None
        return HostCri(sock, problem=f"its CRI did not answer: {res.brief()}")
    try:
        info = json.loads(res.stdout)
    except ValueError:
        return HostCri(sock, problem=f"its CRI answered no JSON: {res.stdout[:120]!r}")
    return HostCri(sock, _version(sock), _handlers(info), _not_ready(info) or _no_pause(sock, info))


def _version(sock: Path) -> str:
    res = proc.run(crictl(sock, "version"), check=False, timeout=30)
    for line in res.stdout.splitlines():
        if line.startswith("RuntimeVersion:"):
            return line.split(":", 1)[1].strip()
    return "?"


def _handlers(info: dict[str, Any]) -> dict[str, bool]:
    """Handler name -> whether its pods' cgroups go through systemd, from the CRI
    plugin's configuration as `crictl info` shows it."""
    runtimes = ((info.get("config") or {}).get("containerd") or {}).get("runtimes") or {}
    out = {}
    for name, rt in runtimes.items():
        options = (rt or {}).get("options") or {}
        out[name] = bool(options.get("SystemdCgroup") or rt.get("systemdCgroup"))
    return out


def _not_ready(info: dict[str, Any]) -> str:
    """Why its runtime or network is not ready ("" when both are)."""
    conditions = (info.get("status") or {}).get("conditions") or []
    for c in conditions:
        if c.get("type") in ("RuntimeReady", "NetworkReady") and not c.get("status"):
            why = c.get("message") or c.get("reason") or "not ready"
            return f"its {c['type']} condition is false ({why})"
    return ""


def _no_pause(sock: Path, info: dict[str, Any]) -> str:
    """Why its pods could not start without a pull: its sandbox image is not there ("" if
    it is, or the configuration names none)."""
    image = (info.get("config") or {}).get("sandboxImage")
    if not image:
        return ""
    res = proc.run(crictl(sock, "inspecti", image), check=False, timeout=30)
    if res.returncode == 0:
        return ""
    return f"its sandbox image {image} is not there, and a run pulls nothing"


def handler_problem(host: HostCri, handler: str) -> str | None:
    """Why the host's containerd cannot run `handler`'s pods for a run; None if it can."""
    if host.problem:
        return host.problem
    if handler not in host.handlers:
        known = ", ".join(sorted(host.handlers)) or "none"
        return f"the host's containerd has no handler {handler!r} (it has: {known})"
    if host.handlers[handler]:
        return f"the host's containerd places {handler!r} pods through systemd (SystemdCgroup)"
    return None


# --- what `virtbench clean` finds in it ----------------------------------------------
def list_objects() -> list[tuple[str, str]]:
    """("instance", pod name) and ("image", tag) of every pod and image of the host's
    containerd; none where there is no such containerd; ListingError where it does not
    answer."""
    host = find()
    if host is None:
        return []
    out: list[tuple[str, str]] = []
    try:
        pods = json.loads(listing(crictl(host.socket, "pods", "-o", "json")))
        images = json.loads(listing(crictl(host.socket, "images", "-o", "json")))
    except ValueError as exc:
        raise ListingError(f"crictl on {host.socket}: not JSON ({exc})") from exc
    for pod in pods.get("items") or []:
        out.append(("instance", (pod.get("metadata") or {}).get("name", "")))
    for img in images.get("images") or []:  # a run's as `vb-<run>-...` (IMPORTED's tail)
        out += [("image", tag.removeprefix(IMPORTED)) for tag in img.get("repoTags") or []]
    return out


def remove_object(kind: str, name: str) -> None:
    """Stop and remove a pod by name (its containers go with it), or an image by tag."""
    host = find()
    if host is None:
        return
    if kind == "image":
        tag = name if "/" in name else IMPORTED + name
        proc.run(crictl(host.socket, "rmi", tag), timeout=120)
        return
    argv = crictl(host.socket, "pods", "--name", f"^{name}$", "-o", "json")
    found = json.loads(listing(argv))
    for pod in found.get("items") or []:
        proc.run(crictl(host.socket, "stopp", pod["id"]), timeout=120)
        proc.run(crictl(host.socket, "rmp", pod["id"]), timeout=120)
