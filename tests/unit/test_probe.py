import socket
import time
from pathlib import Path

from virtbench.measure.probe import ProbeListener


def test_udp_and_unix_datagrams_are_timestamped_on_arrival(tmp_path: Path):
    lst = ProbeListener(tmp_path / "probe")
    try:
        before = time.monotonic_ns()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"ready vb-abc123-1", ("127.0.0.1", lst.port))
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.sendto(b"ready vb-abc123-2", str(tmp_path / "probe" / lst.unix_name))
        t1 = lst.wait("vb-abc123-1", 5)
        t2 = lst.wait("vb-abc123-2", 5)
        assert t1 is not None and t2 is not None
        assert before <= t1 <= time.monotonic_ns() and before <= t2
    finally:
        lst.close()
    assert not (tmp_path / "probe" / lst.unix_name).exists()


def test_garbage_is_ignored_and_wait_times_out(tmp_path: Path):
    lst = ProbeListener(tmp_path / "probe")
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"hello there friend", ("127.0.0.1", lst.port))
            s.sendto(b"ready", ("127.0.0.1", lst.port))
        t0 = time.monotonic()
        assert lst.wait("vb-abc123-9", 0.3) is None
        assert time.monotonic() - t0 >= 0.29
    finally:
        lst.close()


def test_an_aborted_wait_returns_at_once_and_a_ready_still_counts(tmp_path: Path):
    """A wait of 30 s whose abort is set (then `wake`) returns None within a moment; a
    ready that came before the abort is still returned."""
    import threading

    lst = ProbeListener(tmp_path / "probe")
    try:
        abort = threading.Event()
        got: list = []
        waiter = threading.Thread(target=lambda: got.append(lst.wait("vb-abc123-7", 30, abort)))
        waiter.start()
        time.sleep(0.2)
        assert got == []  # still waiting
        t0 = time.monotonic()
        abort.set()
        lst.wake()
        waiter.join(5)
        assert got == [None] and time.monotonic() - t0 < 0.5
        lst.mark("vb-abc123-8", 42)
        assert lst.wait("vb-abc123-8", 30, abort) == 42
    finally:
        lst.close()


def test_many_waits_each_get_their_own_instances_datagram(tmp_path: Path):
    """A burst's waits: each thread waits for its own instance and gets its datagram's
    time, whichever order they come in; two waits for one instance: the first to wake
    takes it, the other times out (as before), and nothing is left waiting."""
    import random
    import threading

    lst = ProbeListener(tmp_path / "probe")
    try:
        names = [f"vb-abc123-{i}" for i in range(50)]
        got: dict[str, int | None] = {}
        threads = [
            threading.Thread(target=lambda n=n: got.__setitem__(n, lst.wait(n, 10))) for n in names
        ]
        for t in threads:
            t.start()
        time.sleep(0.1)
        for k, n in enumerate(random.sample(names, len(names))):
            lst.mark(n, 1000 + k)
        for t in threads:
            t.join(10)
        assert sorted(v for v in got.values() if v is not None) == list(range(1000, 1050))
        assert all(got[n] is not None for n in names) and not lst._waiting
        two: list[int | None] = []
        pair = [
            threading.Thread(target=lambda: two.append(lst.wait("vb-x-1", 0.5))) for _ in range(2)
        ]
        for t in pair:
            t.start()
        time.sleep(0.1)
        lst.mark("vb-x-1", 7)
        for t in pair:
            t.join(5)
        assert sorted(two, key=str) == [7, None] and not lst._waiting
    finally:
        lst.close()
