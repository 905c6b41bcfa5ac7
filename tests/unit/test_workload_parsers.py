"""Client output parsers, on output captured from the real tools (tests/data/workloads)."""

from pathlib import Path

import pytest

from virtbench.workloads import ParseError, nginx, redis

DATA = Path(__file__).parent.parent / "data" / "workloads"
# Output captured from every measuring workload's client, as the parsers read it here
# (tests/unit/test_metrics.py checks each figure it holds is declared as parsed).
OUTPUTS = {
    "nginx": ["wrk-latency.txt"],
    "redis": ["redis-benchmark.csv"],
    "postgres": ["pgbench.txt"],
    "mariadb": [f"sysbench-oltp-{t}.txt" for t in ("read_only", "write_only", "read_write")],
    "sysbench": [f"sysbench-{t}.txt" for t in ("cpu", "memory", "fileio-rndrw", "fileio-seqrd")],
    "fio": ["fio-randrw.json"],
    "iperf3": ["iperf3-tcp.json", "iperf3-tcp-reverse.json", "iperf3-udp.json"],
    "latency": ["vb-rr-tcp.txt", "vb-rr-udp.txt", "ping.txt"],
    "http-fixed": ["httperf.txt"],
    "udp-echo": ["vb-rr-flood.txt"],
    "sqlite": ["vb-sqlite.txt"],
    "stream": ["vb-stream.txt"],
    "syscall": ["vb-syscall.txt", "vb-syscall-sweep.txt"],
    "memcached": ["vb-mcload.txt"],
}


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


def test_stream_best_rates_and_usage_error():
    from virtbench.workloads import stream

    m = by_name(stream.parse((DATA / "vb-stream.txt").read_text()))
    assert m["copy_mb_s"].value == 33192.0 and m["triad_mb_s"].value == 31364.7
    assert m["add_mb_s"].unit == "MB/s" and m["add_mb_s"].direction == "higher"
    with pytest.raises(ParseError, match="usage"):
        stream.parse((DATA / "vb-stream-usage.txt").read_text())


def test_syscall_every_batch_is_a_sample_and_sizes_are_named():
    from virtbench.workloads import syscall

    metrics = syscall.parse((DATA / "vb-syscall.txt").read_text())
    names = [m.name for m in metrics]
    assert names.count("getppid_ns") == 2  # one per batch: the distribution is kept
    assert "sendto_recvfrom_8192b_ns" in names and "read_1b_ns" in names
    assert {"open_close_ns", "stat_ns", "fork_ns", "page_fault_ns"} <= set(names)
    fork = [m.value for m in metrics if m.name == "fork_ns"]
    assert fork == [118039.4, 140349.1]
    with pytest.raises(ParseError, match="usage"):
        syscall.parse((DATA / "vb-syscall-usage.txt").read_text())


def test_sqlite_inserts_and_usage_error():
    from virtbench.workloads import sqlite

    m = by_name(sqlite.parse((DATA / "vb-sqlite.txt").read_text()))
    assert m["inserts_per_s"].value == pytest.approx(19349.8)
    assert m["seconds"].value == pytest.approx(3.100808)
    with pytest.raises(ParseError, match="usage"):
        sqlite.parse((DATA / "vb-sqlite-usage.txt").read_text())


def test_sysbench_cpu_memory_and_unknown_test():
    from virtbench.workloads import sysbench

    cpu = by_name(sysbench.parse((DATA / "sysbench-cpu.txt").read_text()))
    assert cpu["cpu.events_per_s"].value > 0 and cpu["cpu.latency_p95"].unit == "ms"
    mem = by_name(sysbench.parse((DATA / "sysbench-memory.txt").read_text()))
    assert mem["memory.mib_per_s"].value == pytest.approx(6483.16)
    assert mem["memory.ops_per_s"].value == pytest.approx(6638752.40)
    with pytest.raises(ParseError, match="sysbench"):
        sysbench.parse((DATA / "sysbench-bad.txt").read_text())
    p = sysbench.Params(threads=[1, 2], tests=["cpu", "memory"])
    assert sysbench.levels(p) == ["cpu:1", "cpu:2", "memory:1", "memory:2"]
    assert (
        sysbench.label(p, "memory:2") == "@t2" and sysbench.label(sysbench.Params(), "cpu:1") == ""
    )
    argv = sysbench.command(p, "cpu:2")
    assert argv[-2:] == ("cpu", "run") and "--threads=2" in argv and "--cpu-max-prime=10000" in argv


def test_iperf3_json_both_ways_udp_and_refused():
    from virtbench.workloads import iperf3

    tcp = by_name(iperf3.parse((DATA / "iperf3-tcp.json").read_text()))
    assert tcp["tcp.gbit_s"].value == pytest.approx(18.841, rel=1e-3)
    assert tcp["tcp.retransmits"].direction == "lower"
    rev = by_name(iperf3.parse((DATA / "iperf3-tcp-reverse.json").read_text()))
    assert "tcp_reverse.gbit_s" in rev
    udp = by_name(iperf3.parse((DATA / "iperf3-udp.json").read_text()))
    assert udp["udp.gbit_s"].value == pytest.approx(0.1, rel=0.05)
    assert {"udp.jitter_ms", "udp.lost_percent"} <= set(udp)
    with pytest.raises(ParseError, match="Connection refused"):  # iperf3 exits 0 here
        iperf3.parse((DATA / "iperf3-refused.json").read_text())
    with pytest.raises(ParseError):
        iperf3.parse("iperf3: error - unable to connect")
    argv = iperf3.client("10.231.0.2", iperf3.Params(), "udp")
    assert argv[argv.index("-b") + 1] == "100M" and "-J" in argv


def test_sysbench_fileio_prepare_run_cleanup_in_one_log():
    from virtbench.workloads import sysbench

    rndrw = by_name(sysbench.parse((DATA / "sysbench-fileio-rndrw.txt").read_text()))
    assert set(rndrw) == {
        f"fileio.rndrw.{k}"
        for k in (
            "reads_per_s",
            "writes_per_s",
            "fsyncs_per_s",
            "read_mib_per_s",
            "written_mib_per_s",
        )
    }
    assert rndrw["fileio.rndrw.reads_per_s"].value > 0
    seqrd = by_name(sysbench.parse((DATA / "sysbench-fileio-seqrd.txt").read_text()))
    assert seqrd["fileio.seqrd.read_mib_per_s"].value > 0
    assert seqrd["fileio.seqrd.written_mib_per_s"].value == 0
    with pytest.raises(ParseError, match="seqrd: incomplete"):  # run without prepare
        sysbench.parse((DATA / "sysbench-fileio-missing.txt").read_text())
    p = sysbench.Params(tests=["fileio"], fileio_modes=["seqrd"], fileio_total_size="1G")
    assert sysbench.levels(p) == ["fileio.seqrd:1"]
    argv = sysbench.command(p, "fileio.seqrd:1")
    assert argv[:4] == ("/bin/vb-run", "--chdir", "/data", "--")
    steps = " ".join(argv[4:]).split(" ; ")
    assert [s.split()[-1] for s in steps] == ["prepare", "run", "cleanup"]
    assert all("--file-total-size=1G" in s and "--file-test-mode=seqrd" in s for s in steps)


def test_fio_json_and_failed_job():
    from virtbench.workloads import fio

    m = by_name(fio.parse((DATA / "fio-randrw.json").read_text()))
    assert m["randrw.read.iops"].value > 0 and m["randrw.write.iops"].value > 0
    assert m["randrw.read.clat_p99"].unit == "us"
    assert m["randrw.read.clat_p99"].value >= m["randrw.read.clat_p50"].value
    with pytest.raises(ParseError, match="error 20"):  # ENOTDIR; text before the JSON
        fio.parse((DATA / "fio-error.txt").read_text())
    with pytest.raises(ParseError, match="no result"):
        fio.parse("fio: unrecognized option '--bogus'\n")
    argv = fio.command(fio.Params(), "randrw")
    assert "--bs=4k" in argv and "--direct=1" in argv and "--iodepth=1" in argv
    assert "--rw=read" in fio.command(fio.Params(), "seqread")


def test_pgbench_summary_and_refused():
    from virtbench.workloads import postgres

    m = by_name(postgres.parse((DATA / "pgbench.txt").read_text()))
    assert m["tps"].value == pytest.approx(3448.999496)
    assert m["latency_avg"].value == pytest.approx(1.160) and m["failed"].value == 0
    with pytest.raises(ParseError, match="Connection refused"):
        postgres.parse((DATA / "pgbench-refused.txt").read_text())
    argv = postgres.client("10.0.0.2", postgres.Params(), 16)
    assert argv[argv.index("-c") + 1] == "16" and "prepared" in argv


def test_latency_rr_ping_and_errors():
    from virtbench.workloads import latency

    tcp = by_name(latency.parse((DATA / "vb-rr-tcp.txt").read_text()))
    assert tcp["tcp.64B.rtt_p50"].value == pytest.approx(17.195)
    assert tcp["tcp.64B.rtt_p999"].value == pytest.approx(87.269)
    assert tcp["tcp.64B.lost"].value == 0
    udp = by_name(latency.parse((DATA / "vb-rr-udp.txt").read_text()))
    assert udp["udp.1024B.rtt_p99"].value == pytest.approx(92.557)
    icmp = by_name(latency.parse((DATA / "ping.txt").read_text()))
    assert icmp["icmp.rtt_avg"].value == pytest.approx(61.0)
    assert icmp["icmp.loss_pct"].value == 0
    for bad in ("vb-rr-refused.txt", "ping-unreachable.txt"):
        with pytest.raises(ParseError):
            latency.parse((DATA / bad).read_text())
    p = latency.Params()
    assert latency.levels(p) == ["tcp:64", "tcp:1024", "udp:64", "udp:1024", "icmp:0"]
    assert latency.client("10.1.1.2", p, "icmp:0")[0] == "ping"
    with pytest.raises(ValueError):
        latency.Params(sizes=[4])


def test_udp_echo_flood_and_no_reply():
    from virtbench.workloads import udp_echo

    m = by_name(udp_echo.parse((DATA / "vb-rr-flood.txt").read_text()))
    assert m["seconds"].value == pytest.approx(0.400049) and m["lost_pct"].value == 0
    assert m["replies_per_s"].value == pytest.approx(20000 / 0.400049)
    with pytest.raises(ParseError, match="no reply"):
        udp_echo.parse((DATA / "vb-rr-flood-refused.txt").read_text())


def test_httperf_report_and_refused():
    from virtbench.workloads import http_fixed

    m = by_name(http_fixed.parse((DATA / "httperf.txt").read_text()))
    assert m["reply_rate"].value == pytest.approx(3000 / 5.999)
    assert m["response_ms"].value == pytest.approx(0.2) and m["errors"].value == 0
    with pytest.raises(ParseError, match="no replies"):  # httperf exited 0
        http_fixed.parse((DATA / "httperf-refused.txt").read_text())
    argv = http_fixed.client("10.0.0.2", http_fixed.Params(), 500)
    assert argv[argv.index("--num-conns") + 1] == str(500 * 60)


def test_sysbench_oltp_reports_and_refused():
    from virtbench.workloads import mariadb

    for test in ("read_only", "write_only", "read_write"):
        m = by_name(mariadb.parse((DATA / f"sysbench-oltp-{test}.txt").read_text()))
        assert set(m) == {
            f"{test}.{k}" for k in ("tps", "qps", "latency_avg", "latency_p95", "errors")
        }
    rw = by_name(mariadb.parse((DATA / "sysbench-oltp-read_write.txt").read_text()))
    assert rw["read_write.tps"].value == pytest.approx(750.34)
    assert rw["read_write.latency_p95"].value == pytest.approx(3.82)
    with pytest.raises(ParseError, match="unable to connect to MySQL"):
        mariadb.parse((DATA / "sysbench-oltp-refused.txt").read_text())
    p = mariadb.Params(threads=[10, 70])
    assert mariadb.levels(p)[:2] == ["read_only:10", "read_only:70"]
    assert mariadb.label(p, "write_only:70") == "@t70"
    assert "oltp_write_only" in mariadb.client("10.0.0.2", p, "write_only:70")
    argv = mariadb.argv("x")
    assert argv[argv.index("--stdin") + 1] == mariadb.INIT_SQL and argv.count(";") == 1


def test_syscall_payload_sweep_and_page_fault_runs_are_named_by_size_and_pages():
    """Captured from `vb-syscall 2 2 1,256,8192 1,2,10` (S4's sweep shape, shortened)."""
    from virtbench import metrics as registry
    from virtbench.workloads import syscall

    got = syscall.parse((DATA / "vb-syscall-sweep.txt").read_text())
    names = {m.name for m in got}
    for op in ("read", "write", "sendto_recvfrom"):
        assert {f"{op}_1b_ns", f"{op}_256b_ns", f"{op}_8192b_ns"} <= names
    assert {"page_fault_1p_ns", "page_fault_2p_ns", "page_fault_10p_ns"} <= names
    assert [m.name for m in got].count("page_fault_10p_ns") == 2  # one per batch
    ten = min(m.value for m in got if m.name == "page_fault_10p_ns")
    one = max(m.value for m in got if m.name == "page_fault_1p_ns")
    assert ten > one  # ten first touches cost more than one
    assert registry.lookup("page_fault_10p_ns", "syscall").resolution == 1.0
    params = syscall.Params(sizes=[1, 256], page_fault_pages=[1, 10])
    assert syscall.command(params)[3:] == ("1,256", "1,10")
    assert syscall.command(syscall.Params())[3:] == ("1,64,512,4096,8192", "")
    with pytest.raises(ValueError):
        syscall.Params(sizes=[8193])
    with pytest.raises(ParseError, match="usage"):
        syscall.parse((DATA / "vb-syscall-badlist.txt").read_text())


def test_memcached_client_figures_and_usage_error():
    """Captured from vb-mcload against a memcached on this host."""
    from virtbench import metrics as registry
    from virtbench.workloads import memcached

    got = {m.name: m for m in memcached.parse((DATA / "vb-mcload.txt").read_text())}
    assert got["ops_per_s"].value == 23298.7 and got["ops_per_s"].direction == "higher"
    assert got["p99_us"].value == 660.5 and got["p99_us"].direction == "lower"
    assert got["p50_us"].value < got["p90_us"].value < got["p99_us"].value
    assert got["misses"].value == 0
    assert registry.lookup("p99_us", "memcached").plot == "concurrency"
    with pytest.raises(ParseError, match="usage"):
        memcached.parse((DATA / "vb-mcload-usage.txt").read_text())
    wl = memcached.WORKLOAD  # as the experiments read it
    assert wl.measures is not None and wl.serves is not None
    assert wl.measures.parse is memcached.parse and wl.measures.primary is memcached.OPS_PER_S
    params = wl.measures.params
    assert wl.measures.levels(params(connections=[1, 64])) == [1, 64]
    assert wl.measures.suffix(params(connections=[1, 64]), 64) == "@64"
    assert wl.measures.suffix(params(connections=16), 16) == ""
    with pytest.raises(ValueError, match="800"):
        params(connections=[801])
    argv = wl.serves.client("10.0.0.2", params(), 16, wl.serves.port)
    assert argv[:4] == ["/bin/vb-mcload", "10.0.0.2", "11311", "16"]
    assert wl.serves.clients == ("/bin/vb-mcload",) and wl.serves.protocol == "tcp"


def test_udp_echo_pacing_is_a_sweep_with_one_measurement_per_gap():
    from virtbench.workloads import udp_echo

    one = udp_echo.Params()
    assert udp_echo.levels(one) == [20] and udp_echo.label(one, 20) == ""
    swept = udp_echo.Params(gap_us=[0, 20, 100])
    assert udp_echo.levels(swept) == [0, 20, 100] and udp_echo.label(swept, 100) == "@100us"
    assert udp_echo.client("10.0.0.2", swept, 100)[5] == "100"
    assert udp_echo.seconds(swept, 100) > udp_echo.seconds(swept, 0)
    for bad in ([], [5, 5], [-1], -1):
        with pytest.raises(ValueError):
            udp_echo.Params(gap_us=bad)


def test_every_measuring_workload_declares_how_long_one_measurement_takes():
    """The plan's estimate reads the declaration, never guesses from parameter names."""
    from virtbench import workloads
    from virtbench.experiments.estimate import measure_s

    for w in workloads.every():
        if w.measures is None:
            continue
        assert w.measures.seconds is not None, w.name
        params = w.measures.params()
        for level in w.measures.levels(params):
            assert measure_s(w.name, params, level) > 0, w.name
