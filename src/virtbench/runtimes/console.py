"""The serial console of a VM (its guest's alone: the VMM's own messages go to another
file), or a WASI module's stdout: read by a thread per instance, which finds its ready
line and heartbeats (`Console`, which a VM's VMM and wasmtime hold)."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from virtbench.runtimes.model import Instance, RuntimeContext

MARKER = re.compile(rb"VB-(READY|HELLO|EXIT) (\S+)(?: (\d+))?\r*\n")  # whole lines
BEAT = re.compile(rb"VB-BEAT (\S+) ([0-9a-f]+) (\d+)(?: (\d+))?\r*\n")


@dataclass(frozen=True)
class GuestEnd:
    """How a guest whose VMM outlives it says on its console that it is done (an image's
    preset, runtimes/vm/presets.py): `exited`, a regular expression on a line whose first
    group is its program's exit status; `halted`, one on the line after which it does
    nothing more. Each is matched against whole lines."""

    exited: str | None = None
    halted: str | None = None


def read_console(
    inst: Instance,
    pattern: str | None,
    ready: Callable[[int], None],
    beat: Callable[[str, int, int, int], None] | None = None,
    end: GuestEnd | None = None,
    halted: Callable[[int], None] | None = None,
) -> None:
    """Copy the serial console (the VMM's stdout) to the instance's log until it ends,
    stamping its first byte (`t_first_output_ns`) and the markers: `VB-READY <name>`, or
    the image's `pattern` (`{name}` stands for the instance's name), calls `ready(t_ns)`
    once; `VB-HELLO <name>` says the hello workload ran; `VB-EXIT <name> <status>` is a
    Linux guest's workload's status; `VB-BEAT <name> <token> <seq> [<touch-ns>]` calls
    `beat(token, seq, t_ns, touch_ns or 0)` and is not copied to the log (the beat
    workload says it every 2 ms). A copy restored from another instance's snapshot beats
    with that one's name (`inst.beat_as`); what it saw goes to `inst.console`. With
    `end`, its `exited` line is the guest's status too, and its `halted` line is stamped
    (`t_halted_ns`) and calls `halted(t_ns)` once."""
    assert inst.proc is not None and inst.proc.stdout is not None
    fd = inst.proc.stdout.fileno()
    pending = b""  # the line begun and not yet ended
    beat_name = inst.beat_as or inst.name
    seen_by = inst.console
    if pattern is not None:  # `{name}` stands for the instance's name, as in cmdline
        pattern = pattern.replace("{name}", re.escape(inst.name))
    expr = re.compile(pattern.encode()) if pattern is not None else None
    lines = _Lines(inst, ready, end, halted)
    seen = b""  # the console so far, for the image's ready expression (first 64 KiB)
    with open(inst.log_path, "ab", buffering=0) as log:
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            t = time.monotonic_ns()
            if not chunk:
                break
            if seen_by.t_first_output_ns is None:
                seen_by.t_first_output_ns = t
            if beat is not None and b"VB-BEAT" in pending + chunk:
                chunk = _beats(pending, chunk, beat_name, t, beat)
            log.write(chunk)
            if expr is not None and seen_by.t_ready_ns is None and len(seen) < 65536:
                seen += chunk
                if expr.search(seen):
                    ready(t)
            text = pending + chunk
            cut = text.rfind(b"\n") + 1
            lines.whole(text[:cut], t)
            pending = text[cut:][-256:]


class _Lines:
    """The console's whole lines as they come: the markers of virtbench's guests, and
    the lines by which a guest says it is done (`GuestEnd`)."""

    def __init__(
        self,
        inst: Instance,
        ready: Callable[[int], None],
        end: GuestEnd | None,
        halted: Callable[[int], None] | None,
    ) -> None:
        self.inst, self.ready, self.halted = inst, ready, halted
        end = end or GuestEnd()
        self.exited = re.compile(end.exited.encode()) if end.exited else None
        self.halt = re.compile(end.halted.encode()) if end.halted else None

    def whole(self, text: bytes, t: int) -> None:
        """Read the whole lines `text` (ending in a newline, or empty), which came at `t`."""
        seen_by, name = self.inst.console, self.inst.name
        for mark in MARKER.finditer(text):
            if mark.group(2).decode(errors="replace") != name:
                continue
            if mark.group(1) == b"READY" and seen_by.t_ready_ns is None:
                self.ready(t)
            elif mark.group(1) == b"HELLO":
                seen_by.hello = True
            elif mark.group(1) == b"EXIT" and mark.group(3) is not None:
                seen_by.guest_status = int(mark.group(3))
        if self.exited is None and self.halt is None:
            return
        for line in text.splitlines():
            line = line.rstrip(b"\r")
            if self.exited is not None and (m := self.exited.search(line)):
                seen_by.guest_status = int(m.group(1))
            if self.halt is not None and seen_by.t_halted_ns is None and self.halt.search(line):
                seen_by.t_halted_ns = t
                if self.halted is not None:
                    self.halted(t)


def _beats(
    pending: bytes, chunk: bytes, name: str, t: int, beat: Callable[[str, int, int, int], None]
) -> bytes:
    """Call `beat` for each whole heartbeat line of `name` that `chunk` completes; the
    chunk without the heartbeat lines wholly in it (a line begun in an earlier chunk is
    in the log already, and stays)."""
    tail = pending[pending.rfind(b"\n") + 1 :]
    text, start = tail + chunk, len(tail)
    kept, pos = [], start
    for m in BEAT.finditer(text):
        if m.group(1).decode(errors="replace") == name:
            beat(m.group(2).decode(), int(m.group(3)), t, int(m.group(4) or 0))
        if m.start() >= start:
            kept.append(text[pos : m.start()])
            pos = m.end()
    kept.append(text[pos:])
    return b"".join(kept)


class Console:
    """The consoles of a driver's instances: each instance's stdout (its process spawned
    with stdout=PIPE) read by a thread of its own, which marks the instance ready on its
    `VB-READY` line (or a `pattern` of the driver's) and hands heartbeats to the probe
    (`read_console`). A VM's VMM holds one (vm/vmm.py), as wasmtime does."""

    def __init__(self, ctx: RuntimeContext) -> None:
        self.ctx = ctx
        self.readers: dict[str, threading.Thread] = {}

    def start(
        self,
        inst: Instance,
        pattern: str | None = None,
        end: GuestEnd | None = None,
        halted: Callable[[Instance, int], None] | None = None,
    ) -> None:
        """Read `inst`'s console from now on, in a thread of its own: `pattern`, a
        regular expression that says ready besides `VB-READY`; `end`, how the guest says
        it is done where its VMM outlives it, `halted(inst, t_ns)` called (in the
        reader's thread) when it said it halted."""
        reader = threading.Thread(
            target=self.read,
            args=(inst, pattern, end, halted),
            daemon=True,
            name=f"vb-console-{inst.name}",
        )
        self.readers[inst.name] = reader
        reader.start()

    def read(
        self,
        inst: Instance,
        pattern: str | None,
        end: GuestEnd | None,
        halted: Callable[[Instance, int], None] | None,
    ) -> None:
        """Read `inst`'s console to its end (what `start`'s thread does)."""
        probe = self.ctx.probe
        beat = (
            None
            if probe is None
            else (lambda tok, seq, t, touched: probe.beat(inst.name, tok, seq, t, touched))
        )
        read_console(
            inst,
            pattern,
            lambda t: self.ready(inst, t),
            beat,
            end,
            None if halted is None else (lambda t: halted(inst, t)),
        )

    def ready(self, inst: Instance, t: int) -> None:
        """`inst` is ready since `t` (host monotonic ns): its console said so, or its port
        answered (an image that serves)."""
        inst.console.t_ready_ns = t
        if self.ctx.probe is not None:
            self.ctx.probe.mark(inst.name, t)

    def join(self, inst: Instance) -> None:
        """Wait (5 s at most) for the console to be read to its end: its last marker counts."""
        reader = self.readers.get(inst.name)
        if reader is not None:
            reader.join(timeout=5)

    def end(self, inst: Instance) -> None:
        """After the process ended: its console read to the end, and closed."""
        reader = self.readers.pop(inst.name, None)
        if reader is not None:
            reader.join(timeout=5)
        if inst.proc is not None and inst.proc.stdout is not None:
            inst.proc.stdout.close()
