"""Shared test settings. Under VIRTBENCH_STRICT=1 (set by `make test`, which installs
everything), a missing runtime or missing root is a failure, not a skip."""

from __future__ import annotations

import os

import pytest

STRICT = os.environ.get("VIRTBENCH_STRICT") == "1"


def need(condition: bool, reason: str) -> None:
    """Skip when `condition` is false, or fail under VIRTBENCH_STRICT."""
    if condition:
        return
    if STRICT:
        pytest.fail(f"{reason} (VIRTBENCH_STRICT=1: set-up should have provided it)")
    pytest.skip(reason)
