"""A VMM's HTTP API on a unix socket (Firecracker's, Cloud Hypervisor's): connecting once
the VMM has made its socket, one call at a time, and a refusal as an error carrying the
VMM's own words. Pause, resume, snapshot and restore of both go through it (`ApiPause`,
`ApiSnapshot`); the freezer is the way to pause a VMM started without a socket. `ApiVm`
is the base of the drivers whose VMM has one: its option, its sockets' paths."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path
from typing import Any

from virtbench.errors import InstanceError
from virtbench.host.proc import Popen
from virtbench.host.unixhttp import SUN_PATH_MAX, UnixHTTPConnection
from virtbench.runtimes.controls import CgroupFreezer, Snapshot
from virtbench.runtimes.model import Instance
from virtbench.runtimes.vm.base import Vm, VmOptions

API_TIMEOUT_S = 10.0


def fresh_socket(sock: Path, who: str) -> None:
    """Before a VMM makes its API socket at `sock`: a path the kernel takes (InstanceError
    naming the fix), and nothing left there."""
    if len(bytes(sock)) > SUN_PATH_MAX:
        raise InstanceError(
            f"{who}: API socket path {sock} is longer than {SUN_PATH_MAX} "
            "bytes; set VIRTBENCH_STATE_DIR to a shorter directory"
        )
    sock.unlink(missing_ok=True)


def connect(
    sock: Path, vmm: Popen | None, who: str, timeout: float = API_TIMEOUT_S
) -> UnixHTTPConnection:
    """A connection to `sock` once the VMM (`vmm`, just started) has made it: it exists a
    few ms after exec. InstanceError if the VMM exits first or `timeout` passes."""
    deadline = time.monotonic() + timeout
    conn = UnixHTTPConnection(sock, timeout)
    while True:
        try:
            conn.connect()
            return conn
        except (FileNotFoundError, ConnectionRefusedError):
            if vmm is not None and vmm.poll() is not None:
                raise InstanceError(f"{who} exited ({vmm.returncode})") from None
            if time.monotonic() > deadline:
                raise InstanceError(f"{who}: no API socket at {sock} after {timeout:g} s") from None
            time.sleep(0.0005)


def connect_to(inst: Instance, sock: Path, who: str) -> UnixHTTPConnection:
    """`connect` to the VMM `inst` just started; its failure says the console's tail."""
    try:
        return connect(sock, inst.proc, who)
    except InstanceError as exc:
        raise InstanceError(f"{exc}: {inst.log_tail()}") from None


def call(
    conn: http.client.HTTPConnection, method: str, path: str, body: dict[str, Any] | None, who: str
) -> str:
    """`method path` with `body` as JSON; the answer's text. A status of 300 or more is an
    InstanceError with the VMM's reason (Firecracker's `fault_message`, Cloud Hypervisor's
    chain of errors, without its backtrace)."""
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        headers["Content-Type"] = "application/json"
        data = json.dumps(body)
    conn.request(method, path, body=data, headers=headers)
    res = conn.getresponse()
    text = res.read().decode(errors="replace")
    if res.status >= 300:
        raise InstanceError(f"{who}: {method} {path} -> {res.status}: {reason(text)}")
    return text


def reason(text: str) -> str:
    """The words of a VMM's refusal: Firecracker's `{"fault_message": ...}`, Cloud
    Hypervisor's list of errors from outer to inner (its last one's backtrace cut)."""
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:500]
    if isinstance(data, dict) and "fault_message" in data:
        return str(data["fault_message"])
    if isinstance(data, list):
        words = [str(x).split("\n\n")[0].strip() for x in data]
        return ": ".join(dict.fromkeys(w for w in words if w))[:500]
    return text.strip()[:500]


def call_at(
    sock: Path,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    who: str,
    *,
    timeout: float = API_TIMEOUT_S,
) -> str:
    """One call on a fresh connection to a running VMM's socket."""
    conn = UnixHTTPConnection(sock, timeout)
    try:
        return call(conn, method, path, body, who)
    except OSError as exc:
        raise InstanceError(f"{who}: {method} {path}: {exc}") from None
    finally:
        conn.close()


class ApiVmOptions(VmOptions):
    """What a VMM with an HTTP API takes besides every VM's options."""

    api: bool = True  # an API socket (false: none; Firecracker then reads a config file)


class ApiVm(Vm):
    """Base of the VM drivers whose VMM has an HTTP API on a unix socket (Firecracker,
    Cloud Hypervisor): where that socket and the vsock device's are, per instance."""

    options: ApiVmOptions

    def api_socket(self, inst: Instance) -> Path:
        """Its API socket (configuration, pause and snapshot go through it)."""
        return self.ctx.scratch / f"{inst.name}.sock"

    def vsock_path(self, inst: Instance) -> Path:
        """The unix socket of its vsock device (exec reaches vb-agent through it)."""
        return self.ctx.scratch / f"{inst.name}.vsock"


class ApiPause(CgroupFreezer):
    """The VMM's own pause over its API socket (`state(inst, paused)`, the driver's
    calls), returning once it answered; for a VMM started without one (`api = false`),
    the cgroup freezer on the VMM, as for any VM."""

    def _pause(self, inst: Instance) -> None:
        if self.rt.options.api:
            self.state(inst, True)
        else:
            super()._pause(inst)

    def _resume(self, inst: Instance) -> None:
        if self.rt.options.api:
            self.state(inst, False)
        else:
            super()._resume(inst)

    def state(self, inst: Instance, paused: bool) -> None:
        raise NotImplementedError


class ApiSnapshot(Snapshot):
    """A VMM's snapshot through its API: the driver's calls save the paused VM's state and
    memory to the directory (`save`), then the VMM is ended; a restore is a new VMM of the
    driver's, told what to restore (`restore_from`, while its `_command` and
    `_configure` run). Each copy restored beats on its own console."""

    copies = True

    def problem(self) -> str | None:
        return None if self.rt.options.api else "with api = false it has no API socket"

    def checkpoint(self, inst: Instance, image_dir: Path) -> None:
        self.save(inst, self.rt.api_socket(inst), image_dir)
        self.rt.end_vmm(inst)

    def save(self, inst: Instance, sock: Path, image_dir: Path) -> None:
        raise NotImplementedError

    def restore(self, inst: Instance, image_dir: Path) -> None:
        inst.own.restore_from = image_dir
        try:
            self.rt.api_socket(inst).unlink(missing_ok=True)
            self.rt.restart(inst)
        finally:
            inst.own.restore_from = None
