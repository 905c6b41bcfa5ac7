"""crictl, the CRI's own client (cri-tools), talking to one containerd's CRI socket: each
call one crictl process with the run's config file (its endpoints and timeout), its
output parsed from JSON where crictl gives it. A call that fails is an error with
crictl's own last line, never an empty answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from virtbench.errors import InstanceError
from virtbench.host import proc
from virtbench.runtimes.base import which

BINARY = "crictl"
TIMEOUT_S = 120  # a CRI call: a pod's sandbox, a container's create, a stop


def write_config(path: Path, socket: Path) -> Path:
    """crictl's config for `socket` (runtime and image endpoint the same containerd)."""
    path.write_text(
        f"runtime-endpoint: unix://{socket}\n"
        f"image-endpoint: unix://{socket}\n"
        f"timeout: {TIMEOUT_S}\n"
        "pull-image-on-create: false\n"
    )
    return path


class Crictl:
    """crictl with one config file (`write_config`)."""

    def __init__(self, config: Path) -> None:
        self.config = config
        self.binary = which(BINARY) or BINARY

    def argv(self, *args: str) -> list[str]:
        return [self.binary, "--config", str(self.config), *args]

    def call(self, *args: str, timeout: float = TIMEOUT_S) -> str:
        """crictl's output of `args` (stripped); InstanceError with its reason on failure."""
        res = proc.run(self.argv(*args), check=False, timeout=timeout)
        if res.returncode != 0:
            raise InstanceError(f"crictl {args[0]}: {_reason(res.stderr or res.stdout)}")
        return res.stdout.strip()

    def json(self, *args: str, timeout: float = TIMEOUT_S) -> Any:
        """`args` with `-o json` (right after the command: crictl reads no option after
        an argument), parsed."""
        out = self.call(args[0], "-o", "json", *args[1:], timeout=timeout)
        try:
            return json.loads(out)
        except ValueError as exc:
            raise InstanceError(f"crictl {args[0]}: not JSON: {out[:200]!r}") from exc

    def answers(self) -> bool:
        """Whether the CRI on the socket answers (its runtime ready)."""
        res = proc.run(self.argv("info", "-o", "json"), check=False, timeout=10)
        if res.returncode != 0:
            return False
        try:
            conditions = json.loads(res.stdout)["status"]["conditions"]
        except (ValueError, KeyError, TypeError):
            return False
        return any(c.get("type") == "RuntimeReady" and c.get("status") for c in conditions)

    def pods(self, label: str) -> list[dict[str, Any]]:
        """The pod sandboxes carrying `label` ("key=value")."""
        return list(self.json("pods", "--label", label).get("items") or [])


def _reason(text: str) -> str:
    """crictl's error in one line: the CRI's `desc = ...` where it gives one."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    last = lines[-1] if lines else "(no output)"
    _, sep, desc = last.partition("desc = ")
    return (desc if sep else last).rstrip('"')[:400]
