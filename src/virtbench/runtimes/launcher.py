"""The launch of an instance as a launcher command (`crun run -d`, `lxc-start -d`): spawned
with its output in the instance's log, then waited for -- or, in a burst, left for
Runtime.finish_launch to wait for, so that one thread can issue many launcher commands
back to back (functions a driver's `_start` calls); and a foreground wait's failure in
words (Runtime.run_to_exit)."""

from __future__ import annotations

import os
import time

from virtbench.errors import InstanceError
from virtbench.host import proc
from virtbench.runtimes.model import Instance, PendingLaunch


def launch(
    inst: Instance,
    argv: list[str],
    detach: bool,
    timeout: float,
    *,
    env: dict[str, str] | None = None,
    hint: str = "",
) -> None:
    """Spawn a launcher CLI with its output in the instance log. Foreground: keep it as
    `inst.proc`. Detached: wait for it to return (the instance then exists) and raise
    with the log's tail if it failed -- unless a burst defers that (`defer_launch`: the
    wait is left in `inst.pending_launch` for `await_launch`)."""
    with open(inst.log_path, "ab") as log:
        inst.t_spawn_ns = time.monotonic_ns()  # the command built: the spawn itself
        inst.proc = proc.spawn(argv, stdout=log.fileno(), stderr=log.fileno(), env=env)
    if not detach:
        return
    what = f"{os.path.basename(argv[0])} {inst.name}"
    if inst.defer_launch:  # a burst's: waited for by finish_launch
        inst.defer_launch = False
        inst.pending_launch = PendingLaunch(what, timeout, hint)
        return
    await_launch(inst, what, timeout, hint)


def await_launch(inst: Instance, what: str, timeout: float, hint: str) -> None:
    """Wait for a detached launch's launcher to return; raise with the log's tail if
    it failed."""
    assert inst.proc is not None
    try:
        rc = proc.wait(inst.proc, timeout)
    except proc.TimeoutExpired:
        raise InstanceError(f"{what} did not return in {timeout:g} s{hint}") from None
    inst.proc = None
    if rc != 0:
        raise InstanceError(f"{what} failed: {inst.log_tail()}")


def wait_failed(who: str, exc: Exception, timeout: float, said: str = "") -> InstanceError:
    """Why waiting for the foreground instance `who` ("<label>: <name>") failed: it did not
    exit in `timeout` s (and what its log's last lines say, `said`), or the wait itself
    failed (e.g. the engine's daemon went away)."""
    if isinstance(exc, proc.TimeoutExpired | TimeoutError) or (
        "timed out" in str(exc).lower()  # an engine API's read timeout
    ):
        return InstanceError(f"{who} did not exit in {timeout:g} s" + (f": {said}" if said else ""))
    return InstanceError(f"{who} waiting for its exit failed: {exc}")
