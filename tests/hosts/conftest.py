"""The guest host tests run last, and their images are built from the session's start, in
the background: on a fresh machine the build (minutes, mostly downloads and unpacking)
overlaps the rest of the suite instead of adding to it."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

import pytest
from tests.hosts import image

HERE = Path(__file__).parent
_builds: list[threading.Thread] = []


def _release(item) -> str:
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("release", "bookworm") if callspec else "bookworm"


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(session, config, items):
    guests = [i for i in items if i.path.parent == HERE]
    if not guests:
        return
    items[:] = [i for i in items if i.path.parent != HERE] + guests
    if config.option.collectonly:
        return
    for suite in sorted({_release(i) for i in guests}):
        # image.image() holds the image's lock: the test's own call waits for this build
        # (or, had it failed, builds again and says why)
        t = threading.Thread(
            target=_build, args=(image.RELEASES[suite],), name=f"guest image {suite}"
        )
        t.start()
        _builds.append(t)


def _build(release: image.Release) -> None:
    # a failed build is the test's to report: its own call builds again and says why
    with contextlib.suppress(Exception):
        image.image(release, log=lambda _line: None)


def pytest_sessionfinish(session, exitstatus):
    for t in _builds:  # its subprocesses are waited for, never left running
        t.join()
