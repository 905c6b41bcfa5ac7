"""The workloads' figures: what each workload's parse() returns, by workload."""

from __future__ import annotations

from virtbench.metrics.model import Metric, PlotKind
from virtbench.store.records import Direction


def _w(workload: str, name: str, unit: str, direction: Direction, includes: str,
       resolution: float | None = None, plot: PlotKind | None = None) -> Metric:  # fmt: skip
    return Metric(name, unit, direction, includes, resolution=resolution, plot=plot,
                  workload=workload)  # fmt: skip


def _swept(workload: str, name: str, unit: str, direction: Direction, includes: str,
           resolution: float | None = None) -> Metric:  # fmt: skip
    """A figure of a workload that sweeps a numeric level (connections, clients, threads):
    drawn against it."""
    return _w(workload, name, unit, direction, includes, resolution, "concurrency")


# fmt: off
WORKLOADS: tuple[Metric, ...] = (
    _swept("nginx", "requests_per_s", "req/s", "higher", "requests completed / the test's "
           "duration (wrk Requests/sec)", 0.01),
    _swept("nginx", "transfer", "MiB/s", "higher", "response bytes, headers included, per "
           "second (wrk Transfer/sec)"),
    _swept("nginx", "latency_avg", "ms", "lower", "mean time from a request sent to its "
           "response read (wrk)"),
    _swept("nginx", "latency_p*", "ms", "lower", "a percentile (50, 75, 90, 99) of that time "
           "(wrk --latency)"),
    _swept("nginx", "errors", "count", "lower", "socket errors (connect, read, write, timeout) "
           "and non-2xx/3xx responses", 1.0),
    _swept("redis", "*.requests_per_s", "req/s", "higher", "a test's (GET, SET) requests / "
           "its duration, pipelined (redis-benchmark)", 0.01),
    _swept("redis", "*.latency_*", "ms", "lower", "a test's request latency, avg / p50 / p95 / "
           "p99 (redis-benchmark)", 0.001),
    _swept("memcached", "ops_per_s", "ops/s", "higher", "gets and sets completed / the "
           "test's duration, one outstanding per connection (vb-mcload)", 0.1),
    _swept("memcached", "p*_us", "us", "lower", "a percentile (50, 90, 99, 99.9) of the time "
           "from a request's send to its reply's last byte (1 us buckets)", 1.0),
    _swept("memcached", "misses", "gets", "lower", "gets of a key the server no longer held",
           1.0),
    _swept("postgres", "tps", "tx/s", "higher", "transactions / the test's duration, without "
           "the initial connection time (pgbench)", 1e-6),
    _swept("postgres", "latency_avg", "ms", "lower", "pgbench's latency average", 0.001),
    _swept("postgres", "failed", "transactions", "lower", "failed transactions (pgbench)", 1.0),
    _swept("mariadb", "*.tps", "tx/s", "higher", "an OLTP test's transactions per second "
           "(sysbench)", 0.01),
    _swept("mariadb", "*.qps", "queries/s", "higher", "an OLTP test's queries per second "
           "(sysbench)", 0.01),
    _swept("mariadb", "*.latency_*", "ms", "lower", "an OLTP transaction's latency, avg / "
           "95th percentile (sysbench)", 0.01),
    _swept("mariadb", "*.errors", "errors", "lower", "errors sysbench ignored and retried "
           "(deadlocks)", 1.0),
    _swept("sysbench", "cpu.events_per_s", "events/s", "higher", "prime searches up to "
           "cpu_max_prime per second, all threads", 0.01),
    _swept("sysbench", "cpu.latency_*", "ms", "lower", "one event's time, avg / 95th "
           "percentile", 0.01),
    _swept("sysbench", "memory.mib_per_s", "MiB/s", "higher", "memory transferred per second "
           "(block size, operation as configured)", 0.01),
    _swept("sysbench", "memory.ops_per_s", "ops/s", "higher", "memory block operations per "
           "second", 0.01),
    _swept("sysbench", "fileio.*_mib_per_s", "MiB/s", "higher", "a fileio mode's MiB read or "
           "written per second, on the data directory's disk", 0.01),
    _swept("sysbench", "fileio.*_per_s", "ops/s", "higher", "a fileio mode's reads, writes or "
           "fsyncs per second", 0.01),
    _w("fio", "*.*.iops", "IOPS", "higher", "a test's reads or writes per second (fio JSON)"),
    _w("fio", "*.*.mib_per_s", "MiB/s", "higher", "a test's bytes read or written per second "
       "(fio bw_bytes)", 1 / 2**20),
    _w("fio", "*.*.clat_p*", "us", "lower", "a percentile (50, 99) of completion latency, "
       "submission -> completion (fio clat_ns)", 0.001),
    _w("iperf3", "*.gbit_s", "Gbit/s", "higher", "bits the receiver got per second over the "
       "test (iperf3 -J)"),
    _w("iperf3", "*.retransmits", "count", "lower", "TCP retransmits on the sender", 1.0),
    _w("iperf3", "udp.jitter_ms", "ms", "lower", "UDP packet delay variation (iperf3)"),
    _w("iperf3", "udp.lost_percent", "%", "lower", "UDP datagrams lost at the stated rate"),
    _w("latency", "*.*B.rtt_p*", "us", "lower", "a percentile of round trips, message sent -> "
       "reply received, monotonic clock (vb-rr)", 0.001, "latency"),
    _w("latency", "*.*B.rtt_*", "us", "lower", "the mean, least or largest round trip (vb-rr)",
       0.001),
    _w("latency", "*.*B.lost", "messages", "lower", "replies missing after 1 s", 1.0),
    _w("latency", "icmp.rtt_*", "us", "lower", "ping's round trip min / avg / max / mdev", 1.0),
    _w("latency", "icmp.loss_pct", "%", "lower", "ping's packet loss"),
    _swept("http-fixed", "reply_rate", "replies/s", "higher", "replies / the test's duration "
           "(httperf)"),
    _swept("http-fixed", "response_ms", "ms", "lower", "request sent -> first byte of the "
           "reply (httperf Reply time response)", 0.1),
    _swept("http-fixed", "errors", "errors", "lower", "all of httperf's errors, refused and "
           "timed-out connections included", 1.0),
    _swept("http-fixed", "replies", "replies", "higher", "replies received (httperf)", 1.0),
    _swept("udp-echo", "seconds", "s", "lower", "first datagram sent -> last reply received "
       "(vb-rr flood)", 1e-6),
    _swept("udp-echo", "replies", "datagrams", "higher", "replies received", 1.0),
    _swept("udp-echo", "lost_pct", "%", "lower", "datagrams sent without a reply"),
    _swept("udp-echo", "replies_per_s", "1/s", "higher", "replies / seconds"),
    _w("sqlite", "inserts_per_s", "rows/s", "higher", "rows INSERTed per second, timed inside "
       "the instance (vb-sqlite)", 0.1),
    _w("sqlite", "seconds", "s", "lower", "the INSERTs' time, inside the instance", 1e-6),
    _w("stream", "*_mb_s", "MB/s", "higher", "a STREAM kernel's best rate over the passes "
       "(vb-stream)", 0.1),
    _w("syscall", "page_fault_*p_ns", "ns", "lower", "the first touch of k fresh anonymous "
       "pages, all k touches timed, the mapping not (vb-syscall)", 1.0),
    _w("syscall", "*_ns", "ns", "lower", "one operation's cost: a calibrated batch's time / "
       "its iterations (vb-syscall)", 0.1),
)
# fmt: on
