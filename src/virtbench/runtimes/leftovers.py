"""What a runtime's own registry holds on the host, for `virtbench clean` (run/cleanup.py): its
instances, and for engines also their images and networks. A mixin of Runtime: class
methods, since clean runs with no run and no driver instance; names of virtbench's start
with `vb-<run-id>-`, and clean keeps only those of runs that are not alive.
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


class Leftovers:
    """`list_instances`, `remove_instance`, `list_objects`, `remove_object` of a Runtime."""

    @classmethod
    def list_instances(cls) -> list[str]:
        """Names of every instance this runtime holds on the host, ours or not (for
        `virtbench clean`, which keeps the `vb-<run-id>-` ones); raises ListingError when
        they cannot be listed. Default: none, for runtimes whose instances are plain
        processes found by cgroup or environment."""
        return []

    @classmethod
    def remove_instance(cls, name: str) -> None:
        """Force-remove a leftover instance by name (for `virtbench clean`)."""
        del name  # runtimes without a registry of their own have nothing to remove

    @classmethod
    def list_objects(cls) -> list[tuple[str, str]]:
        """(kind, name) of everything this runtime's engine holds that virtbench may have
        made: instances, and for engines also images and networks. Names of ours start
        with `vb-<run-id>-`. Default: the instances."""
        return [("instance", n) for n in cls.list_instances()]

    @classmethod
    def remove_object(cls, kind: str, name: str) -> None:
        """Force-remove one object `list_objects` returned."""
        if kind == "instance":
            cls.remove_instance(name)
