"""Listing what a runtime's own registry holds on the host, for `virtbench clean`
(run/cleanup.py, through the driver's class method `list_objects`, runtimes/base.py): its
instances, and for engines also their images and networks.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from virtbench.errors import ListingError
from virtbench.host import proc

LIST_ATTEMPTS = 8  # crun's `list` fails while any other crun container is being created
LIST_BACKOFF_S = 0.05  # or deleted (7 of 15 calls, measured): retried, doubling, ~6 s in all


def listing(
    argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 60.0
) -> str:
    """The stdout of a runtime's list command; a failure is retried LIST_ATTEMPTS times
    with a doubling pause, then raised as ListingError with the command's last words:
    a listing that failed is never an empty one."""
    last = ""
    for attempt in range(LIST_ATTEMPTS):
        res = proc.run(argv, env=env, check=False, timeout=timeout)
        if res.returncode == 0:
            return res.stdout
        last = res.brief()
        time.sleep(LIST_BACKOFF_S * 2**attempt)
    raise ListingError(f"`{' '.join(argv)}` failed {LIST_ATTEMPTS} times: {last}")
