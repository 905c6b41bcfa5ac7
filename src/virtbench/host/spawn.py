"""Children started with `os.posix_spawn` (glibc: vfork and exec) instead of Popen, whose
Python work before its fork would land in every timed launch (about 0.03 ms back to
back, 0.1 ms or more on a CPU that was idle; Popen's `communicate` adds a poll back-off
after the output ends): `Spawned`, a Popen that host/proc.py's `spawn` starts this way
where the output goes to files. Nothing else calls this module: host/proc.py is the one
way virtbench starts a process.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence

from virtbench.errors import VirtbenchError


@functools.cache
def _devnull() -> int:
    """One /dev/null descriptor for every spawned child's unused streams (close-on-exec
    here; dup'ed onto the child's 0, 1, 2). Made once, before the first spawn, which
    also marks close-on-exec every descriptor above 2 this process inherited (Python
    makes its own so): a posix_spawn child then gets none of them, as Popen's
    `close_fds` would see to (a daemon holding a pipe of the shell that started
    virtbench would keep the shell's reader waiting)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2:
            with contextlib.suppress(OSError):  # the listing's own, closed by now
                if os.get_inheritable(fd):
                    os.set_inheritable(fd, False)
    return os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)


_found: dict[tuple[str, str], str] = {}  # (command, PATH) -> its path, as Popen finds it


def _executable(name: str, env: Mapping[str, str] | None, fresh: bool = False) -> str:
    """`name`'s path: itself if it has a slash, else found on the PATH of `env` (of this
    process if None; the default path if it has none), as Popen looks it up; cached."""
    if "/" in name:
        return name
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    found = None if fresh else _found.get((name, path))
    if found is None:
        found = shutil.which(name, path=path)
        if found is None:
            raise VirtbenchError(f"{name}: command not found")
        _found[(name, path)] = found
    return found


# Python ignores SIGPIPE and SIGXFSZ; Popen's children get them back (restore_signals)
_RESTORED = (signal.SIGPIPE, signal.SIGXFSZ)


class Spawned(subprocess.Popen[bytes]):
    """A child started with `os.posix_spawn` (glibc: vfork and exec), kept as a Popen:
    `wait`, `poll`, `send_signal`, `kill`, `pid` and `returncode` work as Popen's.

    What Popen does in Python before its fork (about 0.03 ms back to back, 0.1 ms on a
    CPU that was idle) would land in every timed launch; this starts the child the way
    Popen would with `stdin=DEVNULL`, `process_group=0` and `restore_signals`. Popen's
    `close_fds` has no posix_spawn equivalent: this process's descriptors are
    close-on-exec (PEP 446; those it inherited are made so before the first spawn:
    `_devnull`), so the child gets only 0, 1 and 2 either way."""

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

    @classmethod
    def start(
        cls,
        argv: Sequence[str],
        stdout: int | None,
        stderr: int | None,
        env: Mapping[str, str] | None,
    ) -> Spawned:
        """Spawn `argv` (stdin /dev/null, stdout and stderr those descriptors or
        /dev/null) in a process group of its own."""
        null = _devnull()
        actions = [
            (os.POSIX_SPAWN_DUP2, null, 0),
            (os.POSIX_SPAWN_DUP2, null if stdout is None else stdout, 1),
            (os.POSIX_SPAWN_DUP2, null if stderr is None else stderr, 2),
        ]
        args = list(argv)

        def spawn(path: str) -> int:
            return os.posix_spawn(
                path,
                args,
                os.environ if env is None else env,
                file_actions=actions,
                setpgroup=0,
                setsigdef=_RESTORED,
            )

        path = _executable(args[0], env)
        try:
            return cls(args, spawn(path))
        except FileNotFoundError as exc:
            if path == args[0]:
                raise VirtbenchError(f"{args[0]}: command not found") from exc
        try:  # the path cached went: looked up again, once
            return cls(args, spawn(_executable(args[0], env, fresh=True)))
        except FileNotFoundError as exc:
            raise VirtbenchError(f"{args[0]}: command not found") from exc
