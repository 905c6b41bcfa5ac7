"""Exec and pause of Docker containers through the Engine API (controls.py), as an
orchestrator drives them: POST /containers/{id}/exec, /exec/{id}/start (its output
read to the end), GET /exec/{id}/json for the status; /pause and /unpause."""

from __future__ import annotations

import time
from typing import Any

from virtbench.errors import InstanceError
from virtbench.runtimes.controls import ExecResult, criu_problem
from virtbench.runtimes.model import Instance


class DockerControls:
    """Mixed into the Docker driver, which gives `api` and `_ids`."""

    api: Any
    _ids: dict[str, str]
    label: str

    def _cid(self, inst: Instance) -> str:
        cid = self._ids.get(inst.name)
        if cid is None:
            raise InstanceError(f"{self.label}: {inst.name} has no container")
        return cid

    def cannot_exec(self) -> str | None:
        return None

    def exec_in(self, inst: Instance, argv: list[str], timeout: float) -> ExecResult:
        del timeout  # the client's own API timeout bounds every call
        cid = self._cid(inst)
        t0 = time.monotonic_ns()
        eid = self.api.exec_create(cid, argv, stdout=True, stderr=True)["Id"]
        nbytes, err = 0, b""
        for out, errout in self.api.exec_start(eid, stream=True, demux=True):
            nbytes += len(out or b"")
            err = (err + (errout or b""))[-300:]
        status = self.api.exec_inspect(eid).get("ExitCode")
        t1 = time.monotonic_ns()
        return ExecResult(t0, t1, -1 if status is None else int(status), nbytes,
                          err.decode(errors="replace"))  # fmt: skip

    def _pause(self, inst: Instance) -> None:
        self.api.pause(self._cid(inst))

    def _resume(self, inst: Instance) -> None:
        self.api.unpause(self._cid(inst))

    def cannot_snapshot(self) -> str | None:
        return criu_problem() or ("docker checkpoint needs dockerd's experimental mode, "
                                  "which virtbench's dockerd does not turn on")  # fmt: skip
