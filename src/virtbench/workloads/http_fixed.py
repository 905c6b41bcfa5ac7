"""`http-fixed`: S2's TCP service -- a fixed ~1.3 KB HTTP reply (nginx `return 200`, the same
nginx binary and configuration as the `nginx` workload, second port), driven by httperf
from the host at a set request rate (S2: 500 and 1000 new connections per second for
60 s, timeout 2 s; `rates` sweeps).

Metrics per rate (`@<rate>` when several): `reply_rate` (replies over the test's
duration), `response_ms`,
`errors` (all httperf counts, refused and timed-out connections included),
`replies`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from virtbench import workloads
from virtbench.figure import Metric
from virtbench.workloads import nginx
from virtbench.workloads.kind import (
    Measures,
    ParseError,
    Serves,
    Workload,
    figure,
    first_line,
    swept,
)

PORT = nginx.FIXED_PORT
REPLY_RATE = swept(
    "http-fixed",
    "reply_rate",
    "replies/s",
    "higher",
    "replies / the test's duration (httperf)",
    label="replies/s",
)
RESPONSE_MS = swept(
    "http-fixed",
    "response_ms",
    "ms",
    "lower",
    "request sent -> first byte of the reply (httperf Reply time response)",
    0.1,
    label="response time",
)
ERRORS = swept(
    "http-fixed",
    "errors",
    "errors",
    "lower",
    "all of httperf's errors, refused and timed-out connections included",
    1.0,
    label="request errors",
)
REPLIES = swept(
    "http-fixed",
    "replies",
    "replies",
    "higher",
    "replies received (httperf)",
    1.0,
    label="replies received",
)
METRICS: tuple[Metric, ...] = (REPLY_RATE, RESPONSE_MS, ERRORS, REPLIES)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rates: list[int] = Field(default=[500, 1000], min_length=1)
    duration_s: int = Field(default=60, ge=1, le=3600)
    timeout_s: float = Field(default=2.0, gt=0, le=60)


def argv(instance: str) -> tuple[str, ...]:
    return nginx.argv(instance)


def levels(params: Params) -> list[int]:
    return list(params.rates)


def client_timeout_s(params: Params, level: int) -> float:
    """A measurement that has not ended at three times its duration never will: httperf
    with --hog stalled for good here at 1000/s (~1000 sockets in CLOSE-WAIT, the process
    spinning on bind), so it runs without it, as S2's did; there it counts what it could
    not open as errors instead (fd-unavail once its connections reach FD_SETSIZE)."""
    del level
    return 3 * params.duration_s + 2 * params.timeout_s + 30


def client(address: str, params: Params, level: int, port: int = PORT) -> list[str]:
    return [
        "httperf",
        "--server",
        address,
        "--port",
        str(port),
        "--uri",
        "/",
        "--rate",
        str(level),
        "--num-conns",
        str(level * params.duration_s),
        "--timeout",
        f"{params.timeout_s:g}",
    ]


def _num(pattern: str, text: str) -> float:
    m = re.search(pattern, text, re.M)
    if m is None:
        raise ParseError(f"httperf: no {pattern.split(':')[0].strip('^')!r}: {first_line(text)}")
    return float(m.group(1))


def parse(output: str) -> list[workloads.Metric]:
    """httperf 0.9's report; it exits 0 even when every connection failed."""
    if "Total: connections" not in output:
        raise ParseError(f"httperf: no result: {first_line(output)}")
    replies = _num(r"^Total: connections \d+ requests \d+ replies (\d+)", output)
    errors = _num(r"^Errors: total (\d+)", output)
    if replies == 0:
        raise ParseError(f"httperf: no replies ({errors:g} errors)")
    # replies over the test's duration (httperf's own "Reply rate" samples every 5 s,
    # and has none in a shorter test)
    duration = _num(r"^Total: connections .* test-duration ([\d.]+) s", output)
    reply_rate = replies / duration if duration > 0 else 0.0
    response = _num(r"^Reply time \[ms\]: response ([\d.]+)", output)
    return [
        figure(REPLY_RATE, reply_rate),
        figure(RESPONSE_MS, response),
        figure(ERRORS, errors),
        figure(REPLIES, replies),
    ]


def seconds(params: Params, level: Any) -> float:
    """About how long one measurement takes here (the plan's estimate): its duration_s."""
    del level
    return params.duration_s + 1.0


WORKLOAD = Workload(
    "http-fixed",
    "serve",
    argv,
    "S2 fixed 1.3 KB HTTP reply (nginx), httperf at a set rate",
    needs=nginx.WORKLOAD.needs,  # the same nginx binary and configuration
    measures=Measures(Params, parse, REPLY_RATE, levels, seconds=seconds),
    serves=Serves(
        PORT,
        "httperf",
        client,
        client_timeout_s=client_timeout_s,
        image_serves="http",
        image_port=80,
    ),
    metrics=METRICS,
    order=160,
    metrics_order=100,
)
