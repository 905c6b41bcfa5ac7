"""`udp-echo`: S2's UDP service test. `count` small datagrams (S2: 100,000), paced
`gap_us` apart, each answered by the instance with `reply_bytes` (1 KB); the host's client
(guest/vb-rr `flood`, the artifact's static program) counts the replies and times from
the first send to the last reply. `gap_us` may be a list: one measurement per pacing gap
(`@<gap>us` in the metric names), as the pacing decides how many datagrams a slow stack
drops.

Metrics: `seconds`, `replies`, `lost_pct`, `replies_per_s`.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from virtbench import workloads
from virtbench.figure import Metric
from virtbench.workloads.kind import (
    Measures,
    Needs,
    ParseError,
    Serves,
    Workload,
    figure,
    first_line,
    swept,
)

PORT = 15301
LEVEL = "pacing gap between datagrams (us)"  # what its swept level is, for plots
SECONDS = swept(
    "udp-echo",
    "seconds",
    "s",
    "lower",
    "first datagram sent -> last reply received (vb-rr flood)",
    1e-6,
    label="time to last reply",
)
REPLIES = swept(
    "udp-echo",
    "replies",
    "datagrams",
    "higher",
    "replies received",
    1.0,
    label="replies received",
)
LOST_PCT = swept(
    "udp-echo",
    "lost_pct",
    "%",
    "lower",
    "datagrams sent without a reply",
    label="datagrams lost",
)
REPLIES_PER_S = swept(
    "udp-echo",
    "replies_per_s",
    "1/s",
    "higher",
    "replies / seconds",
    label="replies/s",
)
METRICS: tuple[Metric, ...] = (SECONDS, REPLIES, LOST_PCT, REPLIES_PER_S)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    count: int = Field(default=100_000, ge=1, le=100_000_000)
    gap_us: int | list[Annotated[int, Field(ge=0, le=1_000_000)]] = Field(default=20)
    request_bytes: int = Field(default=32, ge=8, le=65507)
    reply_bytes: int = Field(default=1024, ge=1, le=65507)

    @field_validator("gap_us")
    @classmethod
    def _gaps(cls, v: int | list[int]) -> int | list[int]:
        if isinstance(v, int) and not 0 <= v <= 1_000_000:
            raise ValueError(f"{v} is not in 0..1000000")
        if isinstance(v, list) and (not v or len(set(v)) != len(v)):
            raise ValueError("give one or more distinct gaps")
        return v


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return ("/bin/vb-rr", "serve", str(PORT))


def levels(params: Params) -> list[int]:
    """The pacing gaps, one measurement each."""
    return list(params.gap_us) if isinstance(params.gap_us, list) else [params.gap_us]


def label(params: Params, level: int) -> str:
    return f"@{level}us" if len(levels(params)) > 1 else ""


def seconds(params: Params, level: int) -> float:
    """About how long one measurement takes (the catalog's estimate): the pacing gap and
    ~10 us of work per datagram."""
    return 1.0 + params.count * (level + 10) / 1e6


def client(address: str, params: Params, level: int, port: int = PORT) -> list[str]:
    return [
        "/bin/vb-rr",
        "flood",
        address,
        str(port),
        str(params.count),
        str(level),
        str(params.request_bytes),
        str(params.reply_bytes),
    ]


def parse(output: str) -> list[workloads.Metric]:
    m = re.search(r"^flood sent=(\d+) received=(\d+) .*seconds=([\d.]+)$", output, re.M)
    if m is None:
        raise ParseError(f"vb-rr flood: no result: {first_line(output)}")
    sent, received, seconds = int(m.group(1)), int(m.group(2)), float(m.group(3))
    return [
        figure(SECONDS, seconds),
        figure(REPLIES, float(received)),
        figure(LOST_PCT, 100.0 * (sent - received) / sent),
        figure(REPLIES_PER_S, received / seconds if seconds > 0 else 0.0),
    ]


WORKLOAD = Workload(
    "udp-echo",
    "serve",
    argv,
    "S2 UDP echo: 100,000 paced datagrams answered with 1 KB (vb-rr flood)",
    needs=Needs(static_programs=("vb-rr",)),
    measures=Measures(Params, parse, SECONDS, levels, label, seconds, level_name=LEVEL),
    # the client is the artifact's vb-rr, run on the host; its readiness is a datagram
    # answered (vb-rr serves TCP too; an image may not)
    serves=Serves(
        PORT, "/bin/vb-rr", client, protocol="udp", image_serves="udp-echo", image_port=7
    ),
    metrics=METRICS,
    order=150,
    metrics_order=110,
)
