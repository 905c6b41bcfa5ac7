"""`youki`: the OCI runtime in Rust, on the bundles virtbench writes for runc and crun.

Debian does not ship it: `make youki` (part of `make test`'s set-up) builds it from its
crate, `cargo install youki@0.7.0 --locked --features v1,v2,seccomp,systemd` (no version
has default features, and without `v1` it cannot run on a cgroup v1 host), into
/usr/local/bin. Its commands are runc's; its `list` has no JSON, so its containers are
listed by id from its table.
"""

from __future__ import annotations

from virtbench.errors import VirtbenchError
from virtbench.runtimes.base import Availability, which
from virtbench.runtimes.leftovers import listing
from virtbench.runtimes.oci.base import OciOptions, OciRuntime

BUILD = "make youki (cargo install youki@0.7.0 --locked --features v1,v2,seccomp,systemd)"


class Youki(OciRuntime):
    name = "youki"
    typical_launch_s = 0.05  # start + stop here without earlier boots
    binary = "youki"
    package = "youki"
    description = "OCI runtime (Rust), bundle from the artifact rootfs"

    @classmethod
    def available(cls, options: OciOptions | None = None) -> Availability:
        if which(cls.binary) is None:
            return Availability(False, reason="youki not on PATH (not in Debian)", fix=BUILD)
        return super().available(options)

    def hang_hint(self) -> str:
        return (
            " (youki 0.7.0's foreground run can miss the exit of a container that "
            "ends at once and never return)"
        )

    @classmethod
    def list_instances(cls) -> list[str]:
        """Every container youki knows, by id: the first column of its `list` table
        (0.7.0 has no JSON, and prints the table even with -q)."""
        if which(cls.binary) is None:
            return []
        return table_ids(listing([cls.binary, "list"], timeout=30))


def table_ids(out: str) -> list[str]:
    """The ids in `youki list`'s table; VirtbenchError for anything else (a listing
    that cannot be read is never an empty one)."""
    lines = out.splitlines()
    if not lines or lines[0].split()[:1] != ["ID"]:
        raise VirtbenchError(f"youki list: not its table: {out.strip()[:200]!r}")
    return [ln.split()[0] for ln in lines[1:] if ln.strip()]
