"""What a run does on the host around its measurements, as one seam of `runner.execute`.

A run reads the cgroup layout, builds its artifact, looks for what earlier runs left, and
at its end removes whatever of its own is left, all through a `Harness`; the defaults
here are the real ones, so a real run behaves exactly as without it. The host's readings
(memory, CPU idle, topology, runnable tasks, the environment snapshot) come from
`Harness.host` (measure/machine.py), which the run's Session and quiet wait use.

A unit test runs a whole spec on a fake runtime without root by passing a Harness of its
own (tests/fakeruntime.py): a layout without cgroups (the run then makes no quiet
sentinel either: measure/quiet.py's Primer needs cgroups), an artifact directory of its
own, and its fake instances as the leftovers.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from virtbench.artifacts import Artifact, build_for
from virtbench.errors import VirtbenchError
from virtbench.host import cgroups
from virtbench.measure.machine import Host
from virtbench.paths import Paths
from virtbench.run import cleanup
from virtbench.store import Store


class Harness:
    """The host a run prepares and cleans up. Subclasses override what they fake."""

    def __init__(self, host: Host | None = None) -> None:
        self.host = host if host is not None else Host()

    def layout(self) -> cgroups.Layout:
        """The mounted cgroup hierarchies (version 0: none)."""
        return cgroups.Layout.detect()

    def artifact(self, experiments: list[Any], paths: Paths) -> Artifact:
        """The rootfs the spec's experiments need, built or taken from the cache."""
        return build_for(experiments, paths.guest_src, paths.cache)

    def prune_cache(self, paths: Paths, run_id: str) -> list[tuple[str, str]]:
        """At a run's end, the artifact cache bounded (artifacts/cache.py): the most
        recently used kept, and every one another run still on the host uses; (level,
        event) of what it removed, or why it could not (a warning, never the run's)."""
        from virtbench.artifacts import cache

        try:
            used = cache.in_use(paths.runs, skip={run_id})
            gone = [e.name for e in cache.prune(paths.cache, cache.keep_default(), used)]
        except (OSError, VirtbenchError) as exc:
            return [("warning", f"artifact cache: not pruned ({exc})")]
        if not gone:
            return []
        said = f"artifact cache: removed the {len(gone)} least recently used ({', '.join(gone)})"
        return [("info", said)]

    def leftovers(
        self,
        paths: Paths,
        layout: cgroups.Layout,
        run_id: str | None = None,
        include_live: bool = False,
        problems: list[str] | None = None,
        engines: Collection[str] | None = None,
    ) -> list[cleanup.Leftover]:
        """What runs (or only `run_id`) left on the host, engines' objects asked of
        `engines` (None: of every runtime; cleanup.scan: what could not be listed
        raises, or goes in `problems` if given)."""
        return cleanup.scan(
            paths,
            run_id=run_id,
            layout=layout,
            include_live=include_live,
            problems=problems,
            engines=engines,
        )

    def remove(self, items: list[cleanup.Leftover], layout: cgroups.Layout) -> list[str]:
        """Remove a run's own leftovers, under the lock the run holds; one message per
        thing that resisted (cleanup.remove)."""
        return cleanup.remove(items, layout, locked=True)


@dataclass(frozen=True)
class Surroundings:
    """What a run works within: the store its records go to, the host's directories,
    where it tells what it does (`say`), and the host as it prepares, reads and cleans it
    (`harness`; default: this one)."""

    store: Store
    paths: Paths
    say: Callable[[str], None]
    harness: Harness = field(default_factory=Harness)
