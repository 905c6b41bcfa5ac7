"""When a guest's server answers: the readiness of an image that prints no ready line.

An image built elsewhere (a unikernel serving HTTP) says nothing virtbench understands on
its console; it is ready when its port answers. `PortWatch` finds that moment from the
host without slowing the boot it times: a fresh non-blocking attempt every `PERIOD_S`
(a TCP connect, for UDP a datagram that asks for an echo, for an image that answers
ping only an ICMP echo request), each left pending while the guest's address is not yet
resolved, all polled together. The ready time is when
the first attempt succeeded, late by at most one period plus a round trip.
"""

from __future__ import annotations

import contextlib
import functools
import os
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


def port_open(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1.0):
            return True
    except OSError:
        return False


PORT_FREE_WAIT_S = 10.0  # a server just ended may hold its port a moment longer


def port_bindable(port: int) -> bool:
    """Whether a server could bind 0.0.0.0:`port` now (as it would, with SO_REUSEADDR):
    False while any socket holds it in a way that blocks that, listening or not."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def wait_bindable(port: int, timeout: float = PORT_FREE_WAIT_S) -> bool:
    """Wait (up to `timeout`) until the host port can be bound; whether it can."""
    deadline = time.monotonic() + timeout
    while not port_bindable(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def udp_answers(address: str, port: int) -> bool:
    """Whether a UDP server at `address:port` answers an echo request within 0.2 s."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.2)
        try:
            s.connect((address, port))
            s.send(echo_request())
            return bool(s.recv(65536))
        except OSError:
            return False


def answers(address: str, port: int, protocol: str) -> bool:
    """Whether a server answers now: a TCP connection accepted, a UDP echo request
    answered, or (icmp) `address` answering ping."""
    if protocol == "icmp":
        return icmp_answers(address)
    return udp_answers(address, port) if protocol == "udp" else port_open(address, port)


def icmp_socket(address: str) -> socket.socket:
    """A raw ICMP socket (root) that receives only what `address` sends."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.connect((address, 0))
    return s


def _checksum(data: bytes) -> int:
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def icmp_request(ident: int, seq: int) -> bytes:
    """An ICMP echo request (type 8) with its checksum."""
    payload = b"virtbench-ready!"  # even length: the checksum sums 16-bit words
    csum = _checksum(struct.pack("!BBHHH", 8, 0, 0, ident, seq) + payload)
    return struct.pack("!BBHHH", 8, 0, csum, ident, seq) + payload


def icmp_reply(packet: bytes, ident: int) -> bool:
    """Whether a raw socket's `packet` (its IP header first) is an echo reply to `ident`."""
    if not packet:
        return False
    start = (packet[0] & 0x0F) * 4
    icmp = packet[start : start + 8]
    if len(icmp) < 8:
        return False
    kind: int
    got: int
    kind, _, _, got, _ = struct.unpack("!BBHHH", icmp)
    return kind == 0 and got == ident


def icmp_ident() -> int:
    """An echo identifier of this thread's own, so that a reply is ours."""
    return (os.getpid() ^ threading.get_ident()) & 0xFFFF


def icmp_answers(address: str, timeout: float = 0.2) -> bool:
    """Whether `address` answers one ICMP echo request within `timeout`."""
    ident = icmp_ident()
    with icmp_socket(address) as s:
        s.settimeout(timeout)
        try:
            s.send(icmp_request(ident, 1))
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if icmp_reply(s.recv(65536), ident):
                    return True
        except OSError:  # a timeout, or no route yet
            return False
    return False


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
        watch = {"tcp": self._tcp, "udp": self._udp, "icmp": self._icmp}[self.proto]
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
            return self._datagrams(s, deadline, lambda _: echo_request(), bool)

    def _icmp(self, deadline: float) -> int | None:
        ident = icmp_ident()
        with icmp_socket(self.target[0]) as s:
            request = functools.partial(icmp_request, ident)
            return self._datagrams(s, deadline, request, lambda p: icmp_reply(p, ident))

    def _datagrams(
        self,
        s: socket.socket,
        deadline: float,
        request: Callable[[int], bytes],
        answered: Callable[[bytes], bool],
    ) -> int | None:
        """A request every period on `s`; the time of the first packet `answered` says
        is an answer."""
        seq = 0
        next_at = time.monotonic()
        while not self._halt.is_set() and time.monotonic() < deadline:
            if time.monotonic() >= next_at:
                seq = (seq + 1) & 0xFFFF
                with contextlib.suppress(OSError):  # unresolved or refused: try again
                    s.send(request(seq))
                next_at = time.monotonic() + PERIOD_S
            readable, _, _ = select.select([s], [], [], max(0.0, next_at - time.monotonic()))
            t = time.monotonic_ns()
            if readable:
                with contextlib.suppress(OSError):  # an ICMP refusal reads as an error
                    if answered(s.recv(65536)):
                        return t
            if self.gone():
                return None
        return None
