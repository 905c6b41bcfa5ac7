"""Exec into a VM: the host's side of vb-agent (guest/vb-agent.c), which vb-init starts in
a Linux guest on a channel the VMM offers the host: QEMU's virtio-serial port behind a
unix socket, or (Firecracker, Cloud Hypervisor) a vsock port the VMM offers as a unix
socket, "hybrid vsock": the host connects, says `CONNECT <port>\n`, and the VMM answers
`OK <host port>\n` once the guest accepted (`HybridVsockAgent`).

One command per connection: the host sends `X <hex argv>\\n` (each argument followed by a
NUL), the guest answers with `O <n>\\n` + n bytes of standard output as they come, then
`R <status> <m>\\n` + the last m bytes of standard error. Timed on the host from the
connect (the exec call issued) to the `R` frame read whole (its exit seen, all output
read), as a container's `runc exec` is.
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING, ClassVar

from virtbench.errors import InstanceError
from virtbench.runtimes.controls import TAIL, Exec, ExecResult

if TYPE_CHECKING:
    from pathlib import Path

    from virtbench.runtimes.model import Instance


class GuestAgent(Exec):
    """Exec through vb-agent; a VMM's subclass says how the host reaches it (`connect`)."""

    why: ClassVar[str] = (
        "its guest has no exec agent: the minimal guest has no processes, "
        "and an image built elsewhere has no vb-agent"
    )

    def problem(self) -> str | None:
        """Commands run in a Linux guest only (`guest = "auto"` boots one for them), which
        cannot boot under a nested PVM KVM."""
        if self.rt.options.guest not in ("auto", "linux"):
            return self.why
        from virtbench.host.facts import kvm_kind

        if self.rt.needs_kvm(self.rt.options) and kvm_kind() == "pvm":
            return (
                "its Linux guest (where the exec agent runs) cannot boot under this "
                "host's nested PVM KVM: use emulation, e.g. qemu:q35:tcg"
            )
        return None

    def problem_in(self, inst: Instance) -> str | None:
        """An instance started without its agent (the minimal guest, where the workload
        is hello, sleep or beat) has none to run a command."""
        if (why := self.problem()) is not None:
            return why
        if not inst.spec.agent:
            return "its instances here boot the minimal guest, which has no exec agent"
        return None

    def connect(self, inst: Instance, timeout: float) -> socket.socket:
        """A connected stream to the instance's agent."""
        raise NotImplementedError

    def run(self, inst: Instance, argv: list[str], timeout: float) -> ExecResult:
        if not inst.spec.agent:
            raise InstanceError(f"{inst.name}: started without its exec channel (agent=False)")
        request = b"X " + "".join(a + "\0" for a in argv).encode().hex().encode() + b"\n"
        t0 = time.monotonic_ns()
        deadline = time.monotonic() + timeout
        try:
            with self.connect(inst, timeout) as sock:
                sock.sendall(request)
                status, out, err, tail = read_reply(sock, deadline)
        except (OSError, TimeoutError) as exc:
            raise InstanceError(f"{self.rt.label}: {inst.name}'s exec agent: {exc}") from None
        said = err.decode(errors="replace")
        return ExecResult(t0, time.monotonic_ns(), status, out, said, tail.decode(errors="replace"))


AGENT_PORT = 1024  # the vsock port vb-agent listens on (vb.agent=vsock:1024)
GUEST_CID = 3  # the guest's vsock address on a VMM's hybrid vsock (any but 0-2)


class HybridVsockAgent(GuestAgent):
    """vb-agent on vsock port AGENT_PORT, through the VMM's unix socket (`vsock_path`)."""

    def problem_in(self, inst: Instance) -> str | None:
        """An instance started without its agent (the minimal guest, where the workload
        is hello, sleep or beat) has none to run a command."""
        if (why := self.problem()) is not None:
            return why
        if not inst.spec.agent:
            return "its instances here boot the minimal guest, which has no exec agent"
        return None

    def connect(self, inst: Instance, timeout: float) -> socket.socket:
        sock = unix_stream(self.rt.vsock_path(inst), timeout)
        try:
            sock.sendall(b"CONNECT %d\n" % AGENT_PORT)
            try:
                answer = Frames(sock, time.monotonic() + timeout).line()
            except TimeoutError:
                answer = b"no answer in time"
            except OSError:  # the VMM closes it when nothing in the guest listens there
                answer = b"closed: no agent listening in the guest"
            if not answer.startswith(b"OK "):
                why = answer.decode(errors="replace")[:80]
                raise OSError(f"the VMM's hybrid vsock, CONNECT {AGENT_PORT}: {why}")
        except BaseException:
            sock.close()
            raise
        return sock


def read_reply(sock: socket.socket, deadline: float) -> tuple[int, int, bytes, bytes]:
    """(exit status, bytes of standard output, standard error's tail, standard output's
    last TAIL bytes) of one reply."""
    reader = Frames(sock, deadline)
    out, tail = 0, b""
    while True:
        head = reader.line().split()
        if head[:1] == [b"O"] and len(head) == 2:
            chunk = reader.exactly(int(head[1]))
            out += len(chunk)
            tail = (tail + chunk)[-TAIL:]
        elif head[:1] == [b"R"] and len(head) == 3:
            return int(head[1]), out, reader.exactly(int(head[2])), tail
        else:
            raise OSError(f"unexpected reply {b' '.join(head)[:60]!r}")


class Frames:
    """Reads lines and counted bytes off a stream, each read within the deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline, self.buf = sock, deadline, bytearray()

    def _more(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no whole reply in time")
        self.sock.settimeout(left)
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise OSError("the channel closed mid-reply")
        self.buf += chunk

    def line(self) -> bytes:
        while b"\n" not in self.buf:
            self._more()
        line, _, rest = bytes(self.buf).partition(b"\n")
        self.buf = bytearray(rest)
        return line

    def exactly(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._more()
        data, self.buf = bytes(self.buf[:n]), self.buf[n:]
        return data


def unix_stream(path: Path, timeout: float) -> socket.socket:
    """A stream connected to the unix socket at `path`."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.settimeout(timeout)
        sock.connect(str(path))
    except BaseException:
        sock.close()
        raise
    return sock
