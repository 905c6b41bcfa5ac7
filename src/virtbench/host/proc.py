"""The one subprocess helper: argv lists only, own process group, timeout, TERM then KILL.

Every external command virtbench runs goes through :func:`run` (wait for it, its output
as text), :func:`run_bytes` (wait for it, its output as bytes, timed tightly) or
:func:`spawn` (keep it running), and every child it started ends through :func:`stop`
(TERM, wait, KILL, to its process group). Children get their own process group so a
Ctrl-C at the terminal reaches virtbench only, and virtbench stops them in order. A
command that times out, or whose wait is interrupted, is ended as a group (what it
started in the background too, even once the command itself has exited), waited for,
and its pipes are closed. A signal reaches only the process meant: a child while it is
not reaped (:func:`signal_child`), any other process through a pidfd (:func:`signal_pid`).

No other module imports subprocess or calls os.kill or os.killpg
(tests/unit/test_processes.py); what they need of subprocess is here: `Popen`,
`TimeoutExpired`, `PIPE`.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from virtbench.errors import VirtbenchError
from virtbench.host import spawn as _spawn

# subprocess's names the rest of virtbench uses (a child's type, a wait's timeout, a pipe
# for `spawn`), so that this module is the only one importing it
Popen = subprocess.Popen
TimeoutExpired = subprocess.TimeoutExpired
PIPE = subprocess.PIPE


@dataclass(frozen=True)
class Result:
    """Outcome of a finished command."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def brief(self) -> str:
        """Last line of stderr (or stdout): what a one-line error should quote."""
        text = (self.stderr or self.stdout).strip().splitlines()
        return text[-1] if text else f"exit status {self.returncode}"


class CommandError(VirtbenchError):
    """A command exited non-zero or timed out."""

    def __init__(self, result: Result, what: str | None = None) -> None:
        self.result = result
        name = what or os.path.basename(result.argv[0])
        super().__init__(f"{name} failed: {result.brief()}")


class CommandTimeout(CommandError):
    """A command ran past its timeout (it and its process group were killed)."""


@dataclass(frozen=True)
class Output:
    """A finished command's exit status and raw output (:func:`run_bytes`), and when it
    ran: `t0_ns` just before it was started, `t1_ns` once it had exited and all of its
    output was read (time.monotonic_ns)."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    t0_ns: int
    t1_ns: int


class Spawned(subprocess.Popen[Any]):
    """A child started with `os.posix_spawn` (glibc: vfork and exec: host/spawn.py) and
    kept as a Popen: `wait`, `poll`, `send_signal`, `kill`, `pid` and `returncode` work
    as Popen's."""

    def __init__(self, args: list[str], pid: int) -> None:
        # not Popen.__init__, which would start another process: what its methods read
        # (CPython's subprocess.Popen)
        self._waitpid_lock = threading.Lock()
        self._input = None
        self._communication_started = False
        self.args = args
        self.stdin = self.stdout = self.stderr = None
        self.pid = pid
        self.returncode = None
        self.encoding = self.errors = None
        self.text_mode = False
        self.pipesize = -1
        self._sigint_wait_secs = 0.25
        self._closed_child_pipe_fds = True
        self._child_created = True


def signal_child(p: Popen[Any], sig: int, *, group: bool = False) -> bool:
    """Send `sig` to the child `p` (to its whole process group if `group`) while it is
    not reaped: until it is waited for, its pid and the group id it leads can name no
    other process. True if it was sent."""
    if p.poll() is not None:
        return False
    try:
        (os.killpg if group else os.kill)(p.pid, sig)
    except ProcessLookupError:
        return False
    return True


def stop(
    p: Popen[Any],
    grace: float = 2.0,
    *,
    leader_grace: float = 0.0,
    rest: bool = False,
    reap: float = 5.0,
) -> int | None:
    """End the child `p` and its process group, and wait for it: virtbench's one TERM,
    wait, KILL. In order, each only while `p` runs: TERM to `p` alone, then up to
    `leader_grace` seconds for its exit (if `leader_grace`: a daemon or systemd-nspawn
    ends what it started itself); TERM to the group, then up to `grace` seconds (if
    `grace`); KILL to the group. With `rest`, KILL also to whatever of the group
    outlives `p` (a child it started in the background that holds its pipes, a
    containerd), even when `p` itself had already exited. Then up to `reap` seconds for
    `p` to be reaped. Its return code, or None if it did not end."""
    for group, seconds in ((False, leader_grace), (True, grace)):
        if seconds > 0 and signal_child(p, signal.SIGTERM, group=group):
            with contextlib.suppress(TimeoutExpired):
                wait(p, seconds)
    signal_child(p, signal.SIGKILL, group=True)
    if rest:
        # While a member is left, the group's id cannot name another process; signal_group
        # checks each process's group through a pidfd.
        signal_group(p.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutExpired):
        wait(p, reap)
    return p.returncode


def signal_pid(pid: int, sig: int, is_same: Callable[[int], bool]) -> bool:
    """Send `sig` to the process `pid` through a pidfd, only if `is_same(pid)` holds once
    the pidfd is open. True if it was sent.

    A pid alone can name another process by the time it is signalled (the one meant
    ended and the number was handed out again). A pidfd names the process that had the
    pid when it was opened; checking who that is after opening it, then signalling
    through it, can hit nothing else: had the process ended and the pid been reused
    between the two, the signal goes to the ended one and fails (ESRCH)."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # gone already
        return False
    try:
        if not is_same(pid):
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except ProcessLookupError:
        return False
    finally:
        os.close(fd)


def signal_group(pgid: int, sig: int) -> int:
    """Send `sig` to every process of the process group `pgid`, each through a pidfd and
    only while it is still in that group (os.killpg would reach a reused group id).
    How many were signalled."""
    sent = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid != os.getpid() and _pgid(pid) == pgid:
            sent += signal_pid(pid, sig, lambda p: _pgid(p) == pgid)
    return sent


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def describe_status(rc: int) -> str:
    """A Popen return code in words: "exited with status 3", "killed by SIGKILL"."""
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"killed by {name}"
    return f"exited with status {rc}"


def wait(p: Popen[Any], timeout: float) -> int:
    """Wait for `p` to exit, waking the moment it does (pidfd + poll): Popen.wait(timeout)
    polls with a back-off of up to 50 ms, which would be added to every timed exit; a
    pidfd becomes readable exactly at exit. Raises TimeoutExpired as Popen.wait does."""
    if p.returncode is not None:
        return p.returncode
    try:
        fd = os.pidfd_open(p.pid)
    except ProcessLookupError:
        return p.wait()
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(max(0, int(timeout * 1000))):
            raise TimeoutExpired(p.args, timeout)
    finally:
        os.close(fd)
    return p.wait()


@contextlib.contextmanager
def _owned(
    argv: Sequence[str],
    input: str | None,
    env: Mapping[str, str] | None,
    *,
    cwd: Path | None = None,
    stdin_path: Path | None = None,
    stdout_path: Path | None = None,
    text: bool = True,
) -> Iterator[Popen[Any]]:
    """`argv` started (`_start`), its output piped (stdout to `stdout_path` if given; bytes
    unless `text`), its input `input` or the file `stdin_path`; whatever ends the block
    early (an error, Ctrl-C) ends its whole group. Its pipes closed, it is waited for."""
    with contextlib.ExitStack() as files:  # closed once started: the child has its copies
        sink = files.enter_context(open(stdout_path, "wb")) if stdout_path else None
        source = files.enter_context(open(stdin_path, "rb")) if stdin_path else None
        p = _start(
            argv,
            stdin=source or (subprocess.PIPE if input is not None else subprocess.DEVNULL),
            stdout=sink or subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=text,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
    with p:  # closes the pipes and waits
        try:
            yield p
        except BaseException:
            stop(p, rest=True)
            raise


def _start(argv: Sequence[str], **popen: Any) -> Popen[Any]:
    """Popen(argv, **popen) in a process group of its own; a start interrupted once the
    child runs (Ctrl-C while Popen waits for its exec) ends its group, not leaves it."""
    p: Popen[Any] = Popen.__new__(Popen)
    try:
        Popen.__init__(p, list(argv), process_group=0, **popen)
        return p
    except FileNotFoundError as exc:  # Popen has reaped the child that could not exec
        raise VirtbenchError(f"{argv[0]}: command not found") from exc
    except BaseException:
        if getattr(p, "pid", None) is not None:  # interrupted once the child was there
            stop(p, rest=True)
            p.__exit__(None, None, None)  # its pipes closed, waited for
        raise


def _communicate(proc: Popen[Any], input: str | None, timeout: float) -> tuple[str, str, bool]:
    """(stdout, stderr, whether it timed out) of `proc` once it exits, or is killed (its
    whole group) after `timeout` seconds."""
    # The timeout is a timer that kills the group, not communicate(timeout=...): with a
    # timeout, Popen waits for the exit by polling with a back-off of up to 50 ms, which
    # would land in timed commands (a runtime's delete is the teardown figure).
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        stop(proc, rest=True)  # what it left running in the background holds its pipes open

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    try:
        timer.start()
        out, err = proc.communicate(input=input)
    finally:
        timer.cancel()
        if timer.is_alive():
            timer.join()  # an expiry under way has ended the whole group once this returns
    return out or "", err, expired.is_set()  # no stdout when it went to `stdout_path`


def run(
    argv: Sequence[str],
    *,
    timeout: float = 60.0,
    check: bool = True,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    what: str | None = None,
    cwd: Path | None = None,
    stdin_path: Path | None = None,
    stdout_path: Path | None = None,
) -> Result:
    """Run `argv` to completion (in `cwd`, if given) and capture its output (its stdout
    goes to the file `stdout_path` instead, if given: binary output); its input is
    `input` or the file `stdin_path` (binary input).

    Raises CommandError on a non-zero exit when `check` is true, and always on timeout
    (CommandTimeout). The child's whole process group is killed on timeout and if this
    call is interrupted, even while Popen starts it; it is always waited for.
    """
    start = time.monotonic()
    with _owned(argv, input, env, cwd=cwd, stdin_path=stdin_path, stdout_path=stdout_path) as proc:
        out, err, expired = _communicate(proc, input, timeout)
    if expired:
        res = Result(
            tuple(argv), -9, out, (err or "") + f"\ntimed out after {timeout:g} s", timeout
        )
        raise CommandTimeout(res, what) from None
    res = Result(tuple(argv), proc.returncode, out, err, time.monotonic() - start)
    if check and proc.returncode != 0:
        raise CommandError(res, what)
    return res


def _exit_by(p: Popen[Any], deadline_ns: int) -> int | None:
    """`p`'s exit status once it has exited, or None if it has not by `deadline_ns`."""
    try:
        return wait(p, max(0.0, (deadline_ns - time.monotonic_ns()) / 1e9))
    except TimeoutExpired:
        return None


def run_bytes(
    argv: Sequence[str],
    *,
    timeout: float = 60.0,
    env: Mapping[str, str] | None = None,
    what: str | None = None,
) -> Output:
    """Run `argv` to completion (no input) and read its output as bytes, however much,
    never decoded; timed from just before its start to its exit with all of it read
    (`t0_ns`, `t1_ns`). Its exit status is returned, not checked.

    Nothing is added to the timed span: no timer thread, and no polling back-off (the
    pipes, then the exit through a pidfd, are waited for here with the time left).
    Raises CommandTimeout after `timeout` seconds. Ended as `run`'s child is.
    """
    t0 = time.monotonic_ns()
    deadline = t0 + int(timeout * 1e9)
    with _owned(argv, None, env, text=False) as p:  # an interruption ends the group
        assert p.stdout is not None and p.stderr is not None
        out, err, done = _spawn.drain(p.stdout.fileno(), p.stderr.fileno(), deadline)
        rc = _exit_by(p, deadline) if done else None
        t1 = time.monotonic_ns()
        if rc is None:
            stop(p, rest=True)
    if rc is None:
        said = err.decode(errors="replace") + f"\ntimed out after {timeout:g} s"
        res = Result(tuple(argv), -9, out[-4096:].decode(errors="replace"), said, timeout)
        raise CommandTimeout(res, what)
    return Output(tuple(argv), rc, out, err, t0, t1)


def spawn(
    argv: Sequence[str],
    *,
    stdout: int | None = None,
    stderr: int | None = None,
    env: Mapping[str, str] | None = None,
) -> Popen[Any]:
    """Start `argv` in its own process group and return without waiting. Its output to
    files opened here (descriptors above 2; None: /dev/null) goes through
    `os.posix_spawn` (`Spawned`); a pipe (`PIPE`), through Popen."""
    if all(fd is None or fd > 2 for fd in (stdout, stderr)):
        return Spawned(list(argv), _spawn.start(argv, stdout, stderr, env))
    return _start(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=stdout if stdout is not None else subprocess.DEVNULL,
        stderr=stderr if stderr is not None else subprocess.DEVNULL,
        env=dict(env) if env is not None else None,
    )


def run_bare(path: str) -> int:
    """Start the program `path` (no arguments, no environment) with a bare posix_spawn
    and reap it at once: the plain process creation of a loop by hand (no pipes, group
    or timer thread). Its wait status."""
    return os.waitpid(os.posix_spawn(path, [path], {}), 0)[1]
