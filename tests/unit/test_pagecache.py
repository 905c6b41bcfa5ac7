"""A file out of the page cache, as a cold restore needs its image: written, it is
cached; dropped, fincore (the kernel's mincore, read by util-linux) finds none of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from virtbench.measure import pagecache


def test_a_written_file_is_dropped_from_the_page_cache_and_fincore_says_so():
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:  # on disk: tmpfs keeps its pages
        tree = Path(d) / "image"
        (tree / "pages").mkdir(parents=True)
        data = os.urandom(4 << 20)
        for name in ("state", "pages/0"):
            (tree / name).write_bytes(data)
        paths = pagecache.files(tree)
        assert [p.name for p in paths] == ["0", "state"]
        for p in paths:
            assert p.read_bytes() == data  # read back: cached, dirty or not
        before, after = pagecache.drop(tree)
        assert before >= 0 and after == 0, (before, after)  # before: a neighbour may drop all
        assert pagecache.resident_bytes(paths) == 0
        assert (tree / "state").read_bytes() == data  # and nothing of it lost
        assert pagecache.resident_bytes([tree / "state"]) >= len(data) // 2
