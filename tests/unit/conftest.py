"""The unit tests' own settings: their fake runs lock in a directory of their own, so that
they neither wait on nor hold up the host's runs (an integration test's `clean`, a run
beside them), nor each other when pytest-xdist runs them in several processes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from virtbench.host import state


@pytest.fixture(autouse=True, scope="session")
def _own_locks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    locks = tmp_path_factory.mktemp("locks")
    patch = pytest.MonkeyPatch()
    patch.setattr(state, "LOCK_DIR", locks)
    patch.setattr(state, "HOST_LOCK", locks / "host.lock")
    yield
    patch.undo()
