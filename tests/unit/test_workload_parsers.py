"""Client output parsers, on output captured from the real tools (tests/data/workloads)."""

from pathlib import Path

import pytest

from virtbench.workloads import ParseError, nginx, redis

DATA = Path(__file__).parent.parent / "data" / "workloads"


def by_name(metrics):
    return {m.name: m for m in metrics}


def test_wrk_latency_report():
    m = by_name(nginx.parse((DATA / "wrk-latency.txt").read_text()))
    assert m["requests_per_s"].value == 56123.00 and m["requests_per_s"].direction == "higher"
    assert m["latency_avg"].value == pytest.approx(0.54987)
    assert m["latency_p50"].value == pytest.approx(0.482)
    assert m["latency_p99"].value == pytest.approx(2.0) and m["latency_p99"].unit == "ms"
    assert m["transfer"].value == pytest.approx(14.08)
    assert m["errors"].value == 0


def test_wrk_connection_refused_is_an_error():
    with pytest.raises(ParseError, match="unable to connect"):
        nginx.parse((DATA / "wrk-refused.txt").read_text())


def test_wrk_socket_errors_are_counted_and_error_pages_refused():
    text = (DATA / "wrk-latency.txt").read_text()
    with_errors = text.replace(
        "Requests/sec:", "  Socket errors: connect 0, read 3, write 0, timeout 7\nRequests/sec:"
    )
    assert by_name(nginx.parse(with_errors))["errors"].value == 10
    pages = text.replace("Requests/sec:", "  Non-2xx or 3xx responses: 173986\nRequests/sec:")
    with pytest.raises(ParseError, match="not 2xx"):
        nginx.parse(pages)


def test_wrk_seconds_latency_units():
    text = (DATA / "wrk-latency.txt").read_text().replace("2.00ms", "1.50s")
    assert by_name(nginx.parse(text))["latency_p99"].value == pytest.approx(1500.0)


def test_redis_benchmark_csv():
    m = by_name(redis.parse((DATA / "redis-benchmark.csv").read_text()))
    assert m["set.requests_per_s"].value == pytest.approx(677966.12)
    assert m["get.requests_per_s"].value == pytest.approx(840336.12)
    assert m["get.latency_p99"].value == pytest.approx(1.863)
    assert m["set.latency_avg"].direction == "lower"


def test_redis_benchmark_refused_is_an_error():
    with pytest.raises(ParseError, match="Could not connect"):
        redis.parse((DATA / "redis-benchmark-refused.txt").read_text())


def test_client_command_lines():
    p = nginx.Params(connections=[1, 100], duration_s=5, threads=8)
    assert nginx.levels(p) == [1, 100]
    argv = nginx.client("10.231.0.2", p, 1)
    assert argv[argv.index("-t") + 1] == "1"  # never more threads than connections
    assert argv[-1] == "http://10.231.0.2:18080/index.html" and "5s" in argv
    r = redis.client("127.0.0.1", redis.Params(), 30)
    assert r[r.index("-P") + 1] == "16" and r[r.index("-t") + 1] == "get,set"
