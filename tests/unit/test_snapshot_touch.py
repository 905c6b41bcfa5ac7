"""`snapshot`'s first touch: a restored instance asked (vb-touch, through exec) to read
what it dirtied says how long that took; the figure recovers the fake runtime's injected
touch time per MiB, warm and cold, at each level; a runtime without exec cannot, said
once, while its restore figures stand."""

from __future__ import annotations

import statistics

from tests.fakeruntime import fake_session, run
from tests.faketruth import RuntimeTruth, Truth

# fa: 0.02 ms per MiB touched after a warm restore, 0.5 ms more per MiB after a cold one
FA = RuntimeTruth(image_mib=2.0, touch_per_mib_ms=0.02, cold_touch_per_mib_ms=0.5)
EXP = {"type": "snapshot", "runs": 2, "dirty_mib": [1, 64], "cache": ["warm", "cold"]}


def test_the_first_touch_after_a_restore_recovers_the_injected_time_warm_and_cold(tmp_path):
    with fake_session(tmp_path, Truth({"fa": FA}, seed=2), ["fa"], EXP) as (s, world):
        samples = run(s)
        assert world.running == {}
    for level in (1, 64):
        for metric, per_mib in (
            ("snapshot.first_touch", 0.02),
            ("snapshot.cold_first_touch", 0.52),
        ):
            got = [x for x in samples if x.metric == f"{metric}@{level}MiB"]
            assert len(got) == 2, (metric, level, got)
            assert abs(statistics.median(x.value for x in got) - per_mib * level) < 1e-3
            assert all(x.params["dirty_mib"] == level for x in got)
    cold = [x for x in samples if x.metric == "snapshot.cold_first_touch@64MiB"]
    assert all(x.params["cache"] == "cold" and x.params["cached_after"] == 0 for x in cold)


def test_a_runtime_that_cannot_run_a_command_cannot_touch_and_says_so_once(tmp_path):
    truth = Truth({"fa": RuntimeTruth(exec_ms=None)}, seed=2)
    exp = {**EXP, "cache": ["warm"]}
    with fake_session(tmp_path, truth, ["fa"], exp) as (s, world):
        samples = run(s)
        every = s.store.samples(s.run_id)
        assert world.running == {}
    touch = [x for x in every if x.metric.startswith("snapshot.first_touch")]
    assert {x.metric for x in touch} == {"snapshot.first_touch@1MiB", "snapshot.first_touch@64MiB"}
    assert len(touch) == 2 and all(x.error == "fa cannot: fake: no exec" for x in touch)
    back = [x for x in samples if x.metric == "snapshot.restore_to_ready@64MiB"]
    assert len(back) == 2  # its restores are measured all the same
