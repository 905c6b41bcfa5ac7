"""QEMU's machine protocol (QMP) on an instance's unix socket, through qemu.qmp's
synchronous client: pause (stop/cont) and snapshots (migration to a file)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from virtbench.errors import InstanceError


class Qmp:
    """One connection to a QEMU's QMP socket (kept for the instance's life)."""

    def __init__(self, path: Path, timeout: float = 10.0) -> None:
        from qemu.qmp.legacy import QEMUMonitorProtocol

        self.path = path
        self._q = QEMUMonitorProtocol(str(path))
        deadline = time.monotonic() + timeout
        while True:  # QEMU makes its socket while it starts
            try:
                self._q.connect()
                return
            except Exception as exc:
                if time.monotonic() > deadline:
                    raise InstanceError(f"QMP at {path}: {exc}") from None
                time.sleep(0.005)

    def cmd(self, name: str, **args: Any) -> Any:
        """Run a QMP command; its return value. InstanceError with QEMU's reason."""
        try:
            return self._q.cmd(name, **args)
        except Exception as exc:
            raise InstanceError(f"QMP {name}: {exc}") from None

    def migrate_to(self, file: Path, timeout: float) -> dict[str, Any]:
        """Save the VM's state to `file` (migration to `cat`); returns query-migrate's
        last answer once it completed. The VM is left stopped (postmigrate)."""
        import shlex

        self.cmd("migrate", uri=f"exec:cat > {shlex.quote(str(file))}")
        deadline = time.monotonic() + timeout
        pause = 0.0005
        while True:
            info = self.cmd("query-migrate")
            status = info.get("status")
            if status == "completed":
                return info
            if status in ("failed", "cancelled"):
                raise InstanceError(
                    f"QEMU migration to {file} {status}: "
                    f"{info.get('error-desc', 'no reason given')}"
                )
            if time.monotonic() > deadline:
                raise InstanceError(f"QEMU migration to {file} not done in {timeout:g} s")
            time.sleep(pause)
            pause = min(pause * 2, 0.01)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a QEMU that quit closes it first
            self._q.close()
