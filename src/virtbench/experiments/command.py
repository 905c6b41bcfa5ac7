"""A command run in an instance to prove there is a way in (`exec`, `tti`, density's
liveness probes): vb-hello, one line out and exit 0, and how its result is judged."""

from __future__ import annotations

from virtbench.runtimes.controls import ExecResult

HELLO = ["/bin/vb-hello"]  # one line out, exit 0: the cheapest command that proves a way in
HELLO_BYTES = len("hello from virtbench\n")


def wrong(res: ExecResult | None, expect: int) -> str:
    """Why a command's result is not a success: a non-zero exit, or other than the
    `expect` bytes on its standard output ("" when it is one, or there is none)."""
    if res is not None and res.status != 0:
        return f"exit status {res.status}: {res.stderr.strip()[-200:]}"
    if res is not None and res.stdout_bytes != expect:
        return f"{res.stdout_bytes} bytes came back of the {expect} written"
    return ""
