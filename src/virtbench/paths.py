"""Where virtbench keeps things on the host, as one typed value passed down from the CLI."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_REPO_GUEST = Path(__file__).resolve().parents[2] / "guest"


@dataclass(frozen=True)
class Paths:
    """Host locations. `state` holds per-run bundles, sockets and ledgers (removed by
    clean); `cache` holds content-addressed artifacts; `guest_src` the C sources; `data`
    the instances' data directories on disk (`<data>/<run-id>/<instance>`, for fio,
    databases: never tmpfs)."""

    state: Path
    cache: Path
    guest_src: Path
    data: Path = Path("/var/lib/virtbench/data")

    @classmethod
    def from_env(cls) -> Paths:
        """Defaults, overridable with VIRTBENCH_STATE_DIR / _CACHE_DIR / _GUEST_DIR / _DATA_DIR."""
        return cls(
            state=Path(os.environ.get("VIRTBENCH_STATE_DIR", "/run/virtbench")),
            cache=Path(os.environ.get("VIRTBENCH_CACHE_DIR", "/var/cache/virtbench")),
            guest_src=Path(os.environ.get("VIRTBENCH_GUEST_DIR", str(_REPO_GUEST))),
            data=Path(os.environ.get("VIRTBENCH_DATA_DIR", "/var/lib/virtbench/data")),
        )

    @property
    def runs(self) -> Path:
        return self.state / "runs"

    def run_dir(self, run_id: str) -> Path:
        return self.runs / run_id

    def data_dir(self, run_id: str) -> Path:
        return self.data / run_id
