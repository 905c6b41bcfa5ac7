"""Where an engine puts its containers' cgroups, by the cgroup driver it runs with.

With `cgroupfs` an engine makes the cgroup parent it is given: the instance's own cgroup
under virtbench's parent, so the container's cgroup sits under the instance's. With
`systemd` (dockerd's default where systemd is the init) it asks systemd for a scope under
a slice, and takes nothing but a slice as the parent: each instance gets its own,
`vb-<run>-<n>.slice`, which systemd places under `vb-<run>.slice` (host/systemd.py), where
the instance's figures are read (cgroups.Layout.controller_dir). Those slices are
systemd's units: stopped through it when the engine is done, never removed as
directories.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from virtbench.host import systemd


@dataclass
class Placement:
    """An engine's cgroup driver, and the instance slices it was given under systemd."""

    driver: str  # "cgroupfs", "systemd", or "unknown" before the engine is reached
    parent: str  # virtbench's parent cgroup (cgroups.Layout.parent)
    slices: set[str] = field(default_factory=set)

    @property
    def through_systemd(self) -> bool:
        return self.driver == "systemd"

    def cgroup_parent(self, name: str) -> str:
        """The cgroup parent the engine is given for instance `name`."""
        if not self.through_systemd:
            return f"/{self.parent}/{name}"
        self.slices.add(systemd.slice_name(name))
        return systemd.slice_name(name)

    def words(self, engine: str, whose: str) -> str:
        """The condition figures are taken under: `systemd (the host's dockerd's cgroup
        driver; a slice per instance)`."""
        where = "a slice per instance" if self.through_systemd else "under virtbench's cgroup"
        return f"{self.driver} ({whose} {engine}'s cgroup driver; {where})"

    def release(self, run_id: str, roots: list[Path]) -> None:
        """Stop the instance slices the engine was given, then the run's slice once no
        other engine of the run holds one in it."""
        if self.slices:
            systemd.stop_slices(sorted(self.slices), systemd.run_slice(run_id), roots)
            self.slices.clear()
