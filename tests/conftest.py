"""Shared test settings. Under VIRTBENCH_STRICT=1 (set by `make test`, which installs
everything), a missing runtime or missing root is a failure, not a skip."""

from __future__ import annotations

import os

import pytest

STRICT = os.environ.get("VIRTBENCH_STRICT") == "1"
# The suite checks density's mechanics, not its memory figures (bench/memory_vs_hand.py
# does): each pile-up waits 2 s for the host's memory to hold still, not 15.
os.environ.setdefault("VIRTBENCH_MEMORY_SETTLE_S", "2")


def need(condition: bool, reason: str) -> None:
    """Skip when `condition` is false, or fail under VIRTBENCH_STRICT."""
    if condition:
        return
    if STRICT:
        pytest.fail(f"{reason} (VIRTBENCH_STRICT=1: set-up should have provided it)")
    pytest.skip(reason)
