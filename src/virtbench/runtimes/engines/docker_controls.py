"""Exec and pause of Docker containers through the Engine API (controls.py), as an
orchestrator drives them: POST /containers/{id}/exec, /exec/{id}/start (its output
read to the end), GET /exec/{id}/json for the status; /pause and /unpause. The Docker
driver declares them; they read its API client (`api`) and `container_id`."""

from __future__ import annotations

import time
from typing import Any

from virtbench.runtimes.controls import TAIL, Exec, ExecResult, Pause, Undriven
from virtbench.runtimes.model import Instance


class DockerExec(Exec):
    """An exec over the Engine API, its output read to the end."""

    rt: Any  # the Docker driver

    def problem(self) -> str | None:
        return None

    def run(self, inst: Instance, argv: list[str], timeout: float) -> ExecResult:
        del timeout  # the client's own API timeout bounds every call
        api = self.rt.api
        cid = self.rt.container_id(inst)
        t0 = time.monotonic_ns()
        eid = api.exec_create(cid, argv, stdout=True, stderr=True)["Id"]
        nbytes, err, tail = 0, b"", b""
        for out, errout in api.exec_start(eid, stream=True, demux=True):
            nbytes += len(out or b"")
            err = (err + (errout or b""))[-300:]
            tail = (tail + (out or b""))[-TAIL:]
        status = api.exec_inspect(eid).get("ExitCode")
        t1 = time.monotonic_ns()
        return ExecResult(
            t0,
            t1,
            -1 if status is None else int(status),
            nbytes,
            err.decode(errors="replace"),
            tail.decode(errors="replace"),
        )


class DockerPause(Pause):
    """POST /containers/{id}/pause and /unpause."""

    rt: Any  # the Docker driver

    def _pause(self, inst: Instance) -> None:
        self.rt.api.pause(self.rt.container_id(inst))

    def _resume(self, inst: Instance) -> None:
        self.rt.api.unpause(self.rt.container_id(inst))


class DockerSnapshot(Undriven):
    why = (
        "docker checkpoint needs dockerd's experimental mode, which virtbench's dockerd "
        "does not turn on"
    )
