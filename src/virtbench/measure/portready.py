"""When a guest's server answers: the readiness of an image that prints no ready line.

An image built elsewhere (a unikernel serving HTTP) says nothing virtbench understands on
its console; it is ready when its port answers. `PortWatch` finds that moment from the
host without slowing the boot it times: a fresh non-blocking attempt every `PERIOD_S`
(a TCP connect, or for UDP a datagram that asks for an echo), each left pending while
the guest's address is not yet resolved, all polled together. The ready time is when
the first attempt succeeded, late by at most one period plus a round trip.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
import time
from collections.abc import Callable

PERIOD_S = 0.002  # a fresh attempt this often: the ready time's resolution
PENDING = 64  # attempts in flight at most (the oldest is dropped)


def echo_request(size: int = 16) -> bytes:
    """A UDP request any echo server answers, and vb-rr's server too: its header says its
    own length and asks for an echo (reply length 0)."""
    return struct.pack("!II", size, 0) + b"\0" * (size - 8)


class PortWatch(threading.Thread):
    """Calls `ready(t_ns)` once `address:port` answers (`proto` tcp or udp); gives up when
    `gone()` says the instance ended, or on `stop()`."""

    def __init__(
        self,
        address: str,
        port: int,
        proto: str,
        ready: Callable[[int], None],
        gone: Callable[[], bool],
        *,
        timeout: float = 3600.0,
    ) -> None:
        super().__init__(daemon=True, name=f"vb-portwatch-{address}:{port}")
        self.target = (address, port)
        self.proto = proto
        self.ready = ready
        self.gone = gone
        self.timeout = timeout
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout
        watch = self._tcp if self.proto == "tcp" else self._udp
        t = watch(deadline)
        if t is not None:
            self.ready(t)

    def _tcp(self, deadline: float) -> int | None:
        pending: list[socket.socket] = []
        next_at = time.monotonic()
        try:
            while not self._halt.is_set() and time.monotonic() < deadline:
                if time.monotonic() >= next_at:  # one fresh attempt per period, no more
                    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
                    s.connect_ex(self.target)
                    pending.append(s)
                    if len(pending) > PENDING:
                        pending.pop(0).close()
                    next_at = time.monotonic() + PERIOD_S
                wait = max(0.0, next_at - time.monotonic())
                if not pending:
                    time.sleep(wait)
                    continue
                _, writable, _ = select.select([], pending, [], wait)
                t = time.monotonic_ns()
                for w in writable:
                    if w.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                        return t
                    pending.remove(w)  # refused: the server is not listening yet
                    w.close()
                if self.gone():
                    return None
            return None
        finally:
            for s in pending:
                s.close()

    def _udp(self, deadline: float) -> int | None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(self.target)
            request = echo_request()
            next_at = time.monotonic()
            while not self._halt.is_set() and time.monotonic() < deadline:
                if time.monotonic() >= next_at:
                    with contextlib.suppress(OSError):  # unresolved or refused: try again
                        s.send(request)
                    next_at = time.monotonic() + PERIOD_S
                readable, _, _ = select.select([s], [], [], max(0.0, next_at - time.monotonic()))
                t = time.monotonic_ns()
                if readable:
                    with contextlib.suppress(OSError):  # an ICMP refusal reads as an error
                        if s.recv(65536):
                            return t
                if self.gone():
                    return None
            return None
