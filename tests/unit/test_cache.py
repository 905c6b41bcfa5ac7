"""The artifact cache is bounded: a prune keeps the most recently used artifacts and every
one a running run uses; a run prunes when it ends and says what it removed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from tests.fakehost import FakeHarness
from tests.fakeruntime import install, tmp_paths
from tests.faketruth import RuntimeTruth, Truth

from virtbench.artifacts import cache
from virtbench.errors import VirtbenchError
from virtbench.run import runner
from virtbench.run.harness import Surroundings
from virtbench.spec import flags as spec_flags
from virtbench.spec.resolved import resolve
from virtbench.store import Store


def artifacts(root: Path, n: int) -> list[Path]:
    """`n` artifact directories, the first used longest ago."""
    out = []
    now = time.time()
    for i in range(n):
        path = root / "artifacts" / f"rootfs-servers-{i:016x}"
        (path / "bin").mkdir(parents=True)
        (path / "bin" / "server").write_bytes(b"x" * 8192)
        os.utime(path, (now - 1000 + i, now - 1000 + i))
        out.append(path)
    (root / "artifacts" / "rootfs-minimal-0.tmp123").mkdir()  # one being built: never listed
    return out


def test_a_prune_keeps_the_most_recently_used_and_what_a_running_run_uses(tmp_path):
    made = artifacts(tmp_path, 5)
    assert [e.path for e in cache.entries(tmp_path)] == made[::-1]  # most recent first
    runs = tmp_path / "runs"
    (runs / "live01").mkdir(parents=True)
    (runs / "dead01").mkdir(parents=True)
    cache.record_use(runs / "live01", [made[0]])
    cache.record_use(runs / "dead01", [made[1]])
    used = cache.in_use(runs, skip={"dead01"})
    assert used == {made[0]}  # the run itself (skipped) protects nothing
    assert cache.in_use(runs) == {made[0], made[1]}  # a dead run not cleaned yet does
    gone = cache.prune(tmp_path, 2, used)
    assert [e.path for e in gone] == [made[2], made[1]]
    assert [p.exists() for p in made] == [True, False, False, True, True]
    assert cache.size(tmp_path) == (3, sum(e.disk_bytes for e in cache.entries(tmp_path)))
    assert (tmp_path / "artifacts" / "rootfs-minimal-0.tmp123").exists()


def test_the_number_kept_is_the_environments_or_one_line_naming_it(monkeypatch):
    monkeypatch.setenv("VIRTBENCH_CACHE_KEEP", "3")
    assert cache.keep_default() == 3
    monkeypatch.setenv("VIRTBENCH_CACHE_KEEP", "many")
    with pytest.raises(VirtbenchError, match="VIRTBENCH_CACHE_KEEP='many': give a whole number"):
        cache.keep_default()
    monkeypatch.delenv("VIRTBENCH_CACHE_KEEP")
    assert cache.keep_default() == cache.KEEP


def test_a_run_prunes_the_cache_when_it_ends_and_says_so(tmp_path, monkeypatch):
    """A run (the runner, on the fake runtime) with three cached artifacts and
    VIRTBENCH_CACHE_KEEP=1: the two used longest ago are gone after it, and its events
    say which."""
    monkeypatch.setenv("VIRTBENCH_CACHE_KEEP", "1")
    made = artifacts(tmp_path / "cache", 3)
    world = install(Truth({"fa": RuntimeTruth()}, seed=1))
    boot = {"type": "boot", "runs": 2, "warmups": 0, "workloads": ["hello"]}
    raw = {"name": "c", "runtimes": ["fa"], "instance": {"network": "none"}, "experiment": [boot]}
    spec = spec_flags.with_overrides(raw, "c", None, {}, drivers=world.drivers)
    store = Store(tmp_path / "results")
    harness = FakeHarness(world, tmp_path)
    run_id, status = runner.execute(
        resolve(spec), Surroundings(store, tmp_paths(tmp_path), lambda m: None, harness)
    )
    events = [m for _, _, m in store.events(run_id)]
    store.close()
    assert status == "completed", events
    assert [p.exists() for p in made] == [False, False, True], events
    said = [m for m in events if m.startswith("artifact cache: removed the 2 least recently")]
    assert said and made[0].name in said[0], events
