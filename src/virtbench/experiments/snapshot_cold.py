"""`snapshot`'s cold restores: with `cache = ["warm", "cold"]`, each level also takes an
instance whose checkpoint image is written back and dropped from the page cache before
it is restored (measure/pagecache.py), as a pool of snapshots on disk is restored: the
restore reads its image from the disk, not from memory. Its restore figures are their
cold twins, with the same level suffix:

  snapshot.cold_restore            the restore call -> it returned
  snapshot.cold_restore_to_ready   the restore call -> the first heartbeat, as
                                   snapshot.restore_to_ready

Each sample says how the image was verified out of the cache: its bytes resident before
the drop and after it (`cached_before`, `cached_after`, by util-linux's fincore); a drop
that left more than `LEFT_MAX` of the image cached fails the repetition.
"""

from __future__ import annotations

from pathlib import Path

from virtbench.errors import InstanceError
from virtbench.figure import MONO, NS_MS, Metric
from virtbench.measure import pagecache

LEFT_MAX = 0.01  # of the image's bytes still cached after the drop: more is not cold

COLD_RESTORE = Metric(
    "snapshot.cold_restore",
    "ms",
    "lower",
    "cache = cold: the restore call, its image written back and dropped from the page "
    "cache first -> it returned" + MONO,
    resolution=NS_MS,
    headline=False,
    label="restore call, from a cold disk",
)
COLD_RESTORE_TO_READY = Metric(
    "snapshot.cold_restore_to_ready",
    "ms",
    "lower",
    "cache = cold: the restore call, its image out of the page cache -> the first "
    "heartbeat with the token drawn before the checkpoint and a later number" + MONO,
    resolution=NS_MS,
    label="back from a snapshot on a cold disk",
)
COLD_METRICS = (COLD_RESTORE, COLD_RESTORE_TO_READY)


def out_of_cache(image: Path) -> dict[str, int]:
    """Drop `image`'s files from the page cache; how it was verified, for the samples'
    params. InstanceError where the drop left the image cached (more than LEFT_MAX)."""
    before, after = pagecache.drop(image)
    total = sum(p.stat().st_size for p in pagecache.files(image))
    if total and after > LEFT_MAX * total:
        raise InstanceError(
            f"the checkpoint image is still {after / 2**20:.1f} of {total / 2**20:.1f} MiB "
            "in the page cache after it was dropped: a restore from it is not cold"
        )
    return {"cached_before": before, "cached_after": after}
