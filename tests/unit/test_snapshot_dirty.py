"""`snapshot` with `dirty_mib`: each level's instance writes that much before ready; the
report's slope of restore to ready against the MiB dirtied recovers the injected 10 ms
per 100 MiB (the fake runtime), and the image grows by what was written."""

from __future__ import annotations

import statistics

from rich.console import Console
from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

from virtbench.report.answers import answers
from virtbench.report.sandbox import dirty_slopes
from virtbench.report.sections import experiment_tables
from virtbench.store.frame import as_frame

# fa: restore to ready 9 ms (CV 5%) + 0.1 ms per MiB dirtied (10 ms per 100 MiB); the
# checkpoint 8 ms + 0.02 ms per MiB; fb: 30 ms + 0.3 ms per MiB (30 ms per 100 MiB)
TRUTH = Truth(
    {
        "fa": RuntimeTruth(
            restore_ready_ms=9.0,
            restore_cv=0.05,
            restore_per_mib_ms=0.1,
            checkpoint_ms=8.0,
            checkpoint_per_mib_ms=0.02,
            image_mib=3.0,
        ),
        "fb": RuntimeTruth(restore_ready_ms=30.0, restore_cv=0.05, restore_per_mib_ms=0.3),
    },
    seed=4,
)
EXP = {"type": "snapshot", "runs": 6, "dirty_mib": [64, 1, 32], "restore_many": 2}


def test_an_injected_restore_slope_of_10ms_per_100mib_is_recovered(tmp_path):
    with fake_session(tmp_path, TRUTH, ["fa", "fb"], EXP) as (s, world):
        samples = run(s)
        record = s.store.run(s.run_id)
        assert world.running == {}
    slopes = {(x.runtime, x.metric): x for x in dirty_slopes(as_frame(samples))}
    restore = slopes[("fa", "snapshot.restore_to_ready")]
    assert sorted(restore.medians) == [1, 32, 64]
    fit = restore.fit
    assert fit is not None and fit.has_ci and fit.ci_low <= 10.0 <= fit.ci_high, fit
    assert abs(fit.slope - 10.0) < 1.5 and fit.ci_high - fit.ci_low < 6
    fb = slopes[("fb", "snapshot.restore_to_ready")].fit
    assert fb is not None and fb.ci_low <= 30.0 <= fb.ci_high, fb
    # the image: 3 MiB of its own + every MiB written, so 100 MiB per 100 MiB dirtied
    size = slopes[("fa", "snapshot.size")]
    assert abs(size.medians[64] - 67.0) < 0.1 and abs(size.fit.slope - 100.0) < 0.5
    checkpoint = slopes[("fa", "snapshot.checkpoint")].fit
    assert checkpoint.slope > 1.5  # 2 ms per 100 MiB slept, and the fake's image written
    # each level's own figures, its params, and the copies restored from it
    at64 = [x for x in samples if x.metric == "snapshot.restore_to_ready@64MiB"]
    assert len(at64) == 12 and all(x.params["dirty_mib"] == 64 for x in at64)
    copies = [
        x for x in samples if x.metric == "snapshot.many_to_ready@64MiB" and x.runtime == "fa"
    ]
    assert len(copies) == 12 and all(x.value > 6.4 for x in copies)
    assert not [x for x in samples if x.metric == "snapshot.restore_to_ready"]
    # the report: the table, and the answers rank the slope (fa's 10 < fb's 30)
    text = "\n".join(_render(t) for t in experiment_tables(record, samples))
    assert "against the memory dirtied" in text and "per 100 MiB dirtied" in text
    found = {a.question: a for a in answers(as_frame(samples))}
    slope = found["Least restore time per memory dirtied"]
    assert [s.runtime for s in slope.ranked] == ["fa", "fb"] and slope.scale == "difference"
    gap = slope.factor(*slope.ranked)  # fb's 30 ms per 100 MiB against fa's 10: 20 more
    assert gap.low < 20 < gap.high and slope.sentences()[0].startswith("fa takes "), gap
    assert found["Fastest back from a checkpoint, 64 MiB dirtied"].metric == (
        "snapshot.restore_to_ready@64MiB"
    )


def test_a_vms_guest_gets_the_same_memory_at_every_level():
    from types import SimpleNamespace

    from virtbench.experiments import snapshot
    from virtbench.runtimes.model import Family

    cfg = snapshot.SnapshotExperiment(type="snapshot", dirty_mib=[512, 1, 64])
    assert cfg.dirty_mib == [1, 64, 512] and cfg.levels() == [1, 64, 512]
    vm = SimpleNamespace(family=Family.VM)
    s = SimpleNamespace(
        runtimes={"q": vm, "c": SimpleNamespace(family=Family.CONTAINER)},
        instance=lambda rt: SimpleNamespace(memory_mib=None),
    )
    assert snapshot.guest_memory(s, "q", cfg) == 576
    assert snapshot.guest_memory(s, "c", cfg) is None


def _render(table) -> str:
    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def test_a_cold_restore_reads_its_image_from_the_disk_and_recovers_its_injected_cost(tmp_path):
    """`cache = ["warm", "cold"]`: each repetition also takes an instance whose image is
    dropped from the page cache (fincore says how much was cached before and after);
    the fake's restore is back 25 ms (fa) or 60 ms (fb) later only when its image is not
    cached, and the cold twins recover that beside the warm ones, in an answer of their
    own."""
    truth = Truth(
        {
            "fa": RuntimeTruth(restore_ready_ms=9.0, image_mib=8.0, cold_ms=25.0),
            "fb": RuntimeTruth(restore_ready_ms=9.0, image_mib=8.0, cold_ms=60.0),
        },
        seed=6,
    )
    exp = {"type": "snapshot", "runs": 5, "cache": ["warm", "cold"]}
    with fake_session(tmp_path, truth, ["fa", "fb"], exp) as (s, world):
        samples = run(s)
        assert world.running == {}
    for rt, extra in (("fa", 25.0), ("fb", 60.0)):
        mine = [x for x in samples if x.runtime == rt]
        warm = [x for x in mine if x.metric == "snapshot.restore_to_ready"]
        cold = [x for x in mine if x.metric == "snapshot.cold_restore_to_ready"]
        assert len(warm) == len(cold) == 5
        assert all(x.params["cache"] == "warm" and "cached_after" not in x.params for x in warm)
        for x in cold:  # the image out of the cache after the drop, as fincore read it
            assert x.params["cache"] == "cold" and x.params["cached_after"] == 0, x.params
            assert x.params["cached_before"] >= 0
        # medians: a neighbour that drops the host's caches (a density run) makes a warm
        # restore cold now and then
        assert abs(statistics.median(x.value for x in cold) - (9.0 + extra)) < 3.0, cold
        assert abs(statistics.median(x.value for x in warm) - 9.0) < 3.0, warm
        assert len([x for x in mine if x.metric == "snapshot.checkpoint"]) == 10
    found = answers(as_frame(samples))
    cold_one = [a for a in found if "cold disk" in a.question]
    assert cold_one and cold_one[0].ranked[0].runtime == "fa", found
