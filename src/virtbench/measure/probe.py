"""The host side of the ready probe: a listener that timestamps `ready <instance>` datagrams.

Instances signal readiness with one datagram, over UDP (when they have a network that
reaches the host: loopback or the run's bridge) or over a unix datagram socket
bind-mounted into them (instances without a network). A background thread receives
them and stamps each with the host's monotonic clock the moment it returns from
recv; guest clocks are never used.

Instances of the `beat` workload go on sending `beat <instance> <token> <seq>`: the
last one of each instance and how many came are kept (`beat`, `wait_beat`). Once asked to
touch the memory it dirtied (vb-touch), each beat also carries how long that took, in the
guest's ns: `beat <instance> <token> <seq> <touch-ns>`.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

UNIX_NAME = "probe.sock"


@dataclass(frozen=True)
class Beat:
    """An instance's last heartbeat: when it arrived (host monotonic ns), the token the
    instance drew at its start, its sequence number, and how many beats came so far."""

    t_ns: int
    token: str
    seq: int
    count: int
    touched_ns: int = 0  # the guest's time to touch its dirtied memory, once asked (0: not)


def beat_numbers(parts: list[str]) -> bool:
    """Whether a beat datagram's sequence number (and touch time) are numbers."""
    return all(x.isdigit() for x in parts[3:])


class Heartbeats:
    """The last heartbeat of each instance, and a wait for the next one."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._beats: dict[str, Beat] = {}

    def beat(self, instance: str, token: str, seq: int, t_ns: int, touched_ns: int = 0) -> None:
        """Record a heartbeat of `instance` that arrived at `t_ns` (the listener's own, or
        one a VM's console reader saw), with the touch time it carried (0: none)."""
        with self._cond:
            last = self._beats.get(instance)
            count = last.count + 1 if last is not None else 1
            self._beats[instance] = Beat(t_ns, token, seq, count, touched_ns)
            self._cond.notify_all()

    def last_beat(self, instance: str) -> Beat | None:
        with self._cond:
            return self._beats.get(instance)

    def wait_beat(self, instance: str, after_count: int, timeout: float) -> Beat | None:
        """The first heartbeat of `instance` received after its `after_count`-th (its
        last one, if several came since), or None on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while (b := self._beats.get(instance)) is None or b.count <= after_count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            return b

    def forget(self, instance: str) -> None:
        """Drop what was kept of `instance` (it was stopped)."""
        with self._cond:
            self._beats.pop(instance, None)


class ProbeListener(Heartbeats):
    """Listens on 127.0.0.1:<port>, optional extra UDP addresses, and a unix socket."""

    def __init__(self, unix_dir: Path, port: int = 0) -> None:
        super().__init__()
        self.unix_dir = unix_dir
        self.unix_name = UNIX_NAME
        self._sel = selectors.DefaultSelector()
        self._socks: list[socket.socket] = []
        self._ready: dict[str, int] = {}
        # each waited-for instance's own condition (on the one lock): a datagram wakes the
        # thread waiting for that instance only, not every waiting thread (a burst's
        # hundred, each taking Python's lock in turn while the launches need the CPUs)
        self._waiting: dict[str, threading.Condition] = {}
        self._waiters: dict[str, int] = {}  # how many threads wait on each
        self._stop_r, self._stop_w = os.pipe()
        self._sel.register(self._stop_r, selectors.EVENT_READ)
        lo = self._bind_udp("127.0.0.1", port)
        self.port = lo.getsockname()[1]
        unix_dir.mkdir(parents=True, exist_ok=True)
        us = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        path = unix_dir / UNIX_NAME
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        us.bind(str(path))
        os.chmod(path, 0o666)
        self._add(us)
        self._thread = threading.Thread(target=self._loop, name="vb-probe", daemon=True)
        self._thread.start()

    def _bind_udp(self, host: str, port: int) -> socket.socket:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((host, port))
        self._add(s)
        return s

    def _add(self, s: socket.socket) -> None:
        s.setblocking(False)
        self._socks.append(s)
        self._sel.register(s, selectors.EVENT_READ)

    def add_udp(self, host: str) -> None:
        """Also listen on `host` (e.g. the run's bridge address), same port. Idempotent."""
        if any(s.family == socket.AF_INET and s.getsockname()[0] == host for s in self._socks):
            return
        self._bind_udp(host, self.port)

    def _loop(self) -> None:
        while True:
            for key, _ in self._sel.select():
                if key.fileobj == self._stop_r:
                    return
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                while True:
                    try:
                        data = sock.recv(512)
                    except BlockingIOError:
                        break
                    t = time.monotonic_ns()
                    parts = data.decode("ascii", "replace").split()
                    if len(parts) == 2 and parts[0] == "ready":
                        self._arrived(parts[1], t)
                    elif len(parts) in (4, 5) and parts[0] == "beat" and beat_numbers(parts):
                        touched = int(parts[4]) if len(parts) == 5 else 0
                        self.beat(parts[1], parts[2], int(parts[3]), t, touched)

    def mark(self, instance: str, t_ns: int) -> None:
        """Record `instance` ready at `t_ns` as if its datagram had arrived then (drivers
        that see readiness elsewhere, e.g. a marker on a VM's serial console)."""
        self._arrived(instance, t_ns)

    def _arrived(self, instance: str, t_ns: int) -> None:
        with self._lock:
            self._ready.setdefault(instance, t_ns)
            if (cond := self._waiting.get(instance)) is not None:
                cond.notify_all()

    def forget(self, instance: str) -> None:
        """Drop what was kept of `instance` (it was stopped)."""
        super().forget(instance)
        with self._cond:
            self._ready.pop(instance, None)

    def wait(
        self, instance: str, timeout: float, abort: threading.Event | None = None
    ) -> int | None:
        """Monotonic ns at which `instance` signalled ready, or None on timeout, or as soon
        as `abort` is set (and `wake` called)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            cond = self._waiting.setdefault(instance, threading.Condition(self._lock))
            self._waiters[instance] = self._waiters.get(instance, 0) + 1
            try:
                while instance not in self._ready:
                    left = deadline - time.monotonic()
                    if left <= 0 or (abort is not None and abort.is_set()):
                        return None
                    cond.wait(left)
                return self._ready.pop(instance)
            finally:
                self._waiters[instance] -= 1
                if not self._waiters[instance]:  # the last one waiting for it
                    del self._waiters[instance], self._waiting[instance]

    def wake(self) -> None:
        """Wake every wait, so that those whose `abort` is set return."""
        with self._lock:
            self._cond.notify_all()
            for cond in self._waiting.values():
                cond.notify_all()

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        self._thread.join(timeout=5)
        for s in self._socks:
            s.close()
        os.close(self._stop_r)
        os.close(self._stop_w)
        with contextlib.suppress(FileNotFoundError):
            (self.unix_dir / UNIX_NAME).unlink()
