"""The fake host (tests/faketruth.py's World as virtbench reads the host: never /proc),
its KSM, and a harness whose builds are the World's."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from tests.faketruth import MIB, World

from virtbench import naming
from virtbench.artifacts import Artifact
from virtbench.host import cgroups
from virtbench.host.ksm import Counters
from virtbench.measure.machine import Host
from virtbench.measure.topology import Topology
from virtbench.paths import Paths
from virtbench.run import cleanup
from virtbench.run.harness import Harness


class FakeKsm:
    """KSM as the fake host has it: on while applied, off again once restored."""

    def __init__(self, world: World) -> None:
        self.world = world

    def apply(self) -> dict:
        self.world.ksm_on = True
        return {}

    def restore(self) -> list[str]:
        self.world.ksm_on = False
        return []


class FakeHost(Host):
    """The host as virtbench reads it, from the World: never /proc."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.running_reads = 0  # how often the quiet wait asked (tests check it did)

    def emulated(self) -> bool:
        return self.world.truth.emulated_host

    def meminfo(self) -> dict[str, int]:
        total = int(self.world.truth.mem_total_mib * MIB)
        return {
            "MemTotal": total,
            "MemAvailable": self.mem_available(),
            "SwapTotal": 0,
            "SwapFree": 0,
            "Slab": self.world.slab(),
            "PageTables": 8 * MIB,
            "KernelStack": 4 * MIB,
            "Percpu": 2 * MIB,
        }

    def mem_available(self) -> int:
        return self.world.mem_available()

    def pcp_free(self) -> int:
        return 0  # the fake's free memory is all in MemAvailable

    def sharing_problem(self) -> str | None:
        return None

    def sharing(self, state_dir: Path) -> FakeKsm:
        del state_dir  # nothing of the real host's is changed
        return FakeKsm(self.world)

    def shared(self) -> Counters:
        """What the fake's KSM shares: all it merges from its first read on (a full scan a
        read)."""
        self.world.ksm_reads += 1
        return Counters(self.world.merged() // 4096, self.world.ksm_reads)

    def drop_caches(self) -> bool:
        return True

    def settle_memory(
        self, window_s: float, timeout_s: float = 60.0, drop: bool = True
    ) -> tuple[float, bool]:
        return 0.0, True  # the fake's memory has no deferred frees

    def availability(self, window_s: float) -> dict[str, float]:
        del window_s  # no CPU idle to watch: the fake's instances use none
        total = self.world.truth.mem_total_mib * MIB
        return {
            "host.cpu_idle_pct": 100.0,
            "host.swap_free_pct": 100.0,
            "host.mem_available_pct": 100.0 * self.mem_available() / total,
        }

    def topology(self) -> Topology:
        return self.world.truth.topology

    def running(self) -> int:
        self.running_reads += 1
        return 1  # only the reader: a quiet wait ends after its window

    def snapshot(self, runtime_versions: dict[str, str]) -> dict[str, Any]:
        from tests.fakerun import ENVIRONMENT

        cpus = len(self.world.truth.topology.cpus)
        return {**ENVIRONMENT, "cpu_count": cpus, "runtimes": runtime_versions}


class FakeHarness(Harness):
    """A run on the World without root: no cgroups (so no quiet sentinel), an empty
    artifact directory under `root`, and the World's running instances as leftovers."""

    host: FakeHost

    def __init__(self, world: World, root: Path) -> None:
        super().__init__(FakeHost(world))
        self.world = world
        self.root = root

    def layout(self) -> cgroups.Layout:
        return cgroups.Layout(0, {}, None)

    def artifact(self, experiments: list[Any], paths: Paths) -> Artifact:
        del experiments, paths
        path = self.root / "rootfs"
        path.mkdir(parents=True, exist_ok=True)
        return Artifact("rootfs-fake", "minimal", "f" * 64, path, 0, 0)

    def leftovers(
        self,
        paths: Paths,
        layout: cgroups.Layout,
        run_id: str | None = None,
        include_live: bool = False,
        problems: list[str] | None = None,
        engines: Collection[str] | None = None,
    ) -> list[cleanup.Leftover]:
        del paths, layout, include_live, problems, engines
        found = [(naming.run_id_of(n), n) for n in self.world.running]
        return [
            cleanup.Leftover("instance", n, rid, "fake")
            for rid, n in found
            if rid and run_id in (None, rid)
        ]

    def remove(self, items: list[cleanup.Leftover], layout: cgroups.Layout) -> list[str]:
        del layout
        for it in items:
            inst = self.world.running.get(it.name)
            if inst is not None:
                self.world.stop(it.name, inst.label)
        return []
