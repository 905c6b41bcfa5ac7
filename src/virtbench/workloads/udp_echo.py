"""`udp-echo`: S2's UDP service test. `count` small datagrams (S2: 100,000), paced
`gap_us` apart, each answered by the instance with `reply_bytes` (1 KB); the host's client
(guest/vb-rr `flood`, the artifact's static program) counts the replies and times from
the first send to the last reply.

Metrics: `seconds`, `replies`, `lost_pct`, `replies_per_s`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from virtbench.workloads import Metric, ParseError, first_line

NAME = "udp-echo"
ENDS = "serve"
PRIMARY = "seconds"
PRIMARY_UNIT, PRIMARY_DIRECTION = "s", "lower"
DESCRIPTION = "S2 UDP echo: 100,000 paced datagrams answered with 1 KB (vb-rr flood)"
PORT = 15301
CLIENT = "/bin/vb-rr"  # from the artifact (runs on the host)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(default=100_000, ge=1, le=100_000_000)
    gap_us: int = Field(default=20, ge=0, le=1_000_000)
    request_bytes: int = Field(default=32, ge=8, le=65507)
    reply_bytes: int = Field(default=1024, ge=1, le=65507)


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return ("/bin/vb-rr", "serve", str(PORT))


def levels(params: Params) -> list[None]:
    del params
    return [None]


def seconds(params: Params, level: None) -> float:
    """About how long one measurement takes (the catalog's estimate): the pacing gap and
    ~10 us of work per datagram."""
    del level
    return 1.0 + params.count * (params.gap_us + 10) / 1e6


def client(address: str, params: Params, level: None) -> list[str]:
    del level
    return ["/bin/vb-rr", "flood", address, str(PORT), str(params.count), str(params.gap_us),
            str(params.request_bytes), str(params.reply_bytes)]  # fmt: skip


def parse(output: str) -> list[Metric]:
    m = re.search(r"^flood sent=(\d+) received=(\d+) .*seconds=([\d.]+)$", output, re.M)
    if m is None:
        raise ParseError(f"vb-rr flood: no result: {first_line(output)}")
    sent, received, seconds = int(m.group(1)), int(m.group(2)), float(m.group(3))
    return [
        Metric("seconds", seconds, "s", "lower"),
        Metric("replies", float(received), "datagrams", "higher"),
        Metric("lost_pct", 100.0 * (sent - received) / sent, "%", "lower"),
        Metric("replies_per_s", received / seconds if seconds > 0 else 0.0, "1/s", "higher"),
    ]
