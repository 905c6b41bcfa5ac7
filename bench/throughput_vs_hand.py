"""Throughput overhead check: virtbench's `native` nginx and redis figures against the same
server and client run by hand, with the same parameters.

By hand means what a user would type: start the server from the servers artifact on the
host (`nginx -e stderr -p ROOT/srv/nginx/ -c ROOT/srv/nginx/nginx.conf`, `redis-server
ROOT/etc/virtbench/redis.conf`), wait for its port, run the client (`wrk --latency -t T -c
30 -d 20s URL`, `redis-benchmark -c 30 -P 16 -n N -t get,set --csv`), stop the server.
That is done `--runs` times before and after `virtbench run throughput --runtimes native
--runs N`; the ratio of virtbench's median to the median of all by-hand runs is printed
for nginx requests/s and redis GET and SET requests/s. Target: within 10% (0.9-1.1).

    .venv/bin/python bench/throughput_vs_hand.py [--runs 3] [--duration 20] [--requests 5000000]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import virtbench_run

from virtbench.artifacts import build_servers_rootfs
from virtbench.measure.portready import port_open
from virtbench.paths import Paths
from virtbench.store import Store
from virtbench.workloads import nginx, redis


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not port_open("127.0.0.1", port):
        if time.monotonic() > deadline:
            raise SystemExit(f"port {port} did not open")
        time.sleep(0.05)


def by_hand(server: list[str], port: int, client: list[str]) -> dict[str, float]:
    srv = subprocess.Popen(server, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        out = subprocess.run(client, capture_output=True, text=True, check=True).stdout
    finally:
        srv.send_signal(signal.SIGTERM)  # the server we started, by its pid
        srv.wait(30)
    wl = nginx if port == nginx.PORT else redis
    return {m.name: m.value for m in wl.parse(out)}


def virtbench(runs: int, duration: int, requests: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory(prefix="vb-bench-") as tmp:
        spec = Path(tmp) / "tp.toml"
        spec.write_text(
            'name = "tp-vs-hand"\nruntimes = ["native"]\n[instance]\nnetwork = "host"\n'
            f'[[experiment]]\ntype = "throughput"\nruns = {runs}\n'
            f"[experiment.params.nginx]\nconnections = 30\nduration_s = {duration}\n"
            f"[experiment.params.redis]\nclients = 30\npipeline = 16\nrequests = {requests}\n"
        )
        run_id = virtbench_run.run([str(spec)], Path(tmp))
        out: dict[str, list[float]] = {}
        for s in Store(Path(tmp)).samples(run_id):
            if s.value is not None and not s.warmup:
                out.setdefault(f"{s.workload}.{s.metric}", []).append(s.value)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--requests", type=int, default=5_000_000)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    paths = Paths.from_env()
    root = build_servers_rootfs(paths.guest_src, paths.cache, ["nginx", "redis"]).path
    np = nginx.Params(connections=30, duration_s=args.duration)
    rp = redis.Params(clients=30, pipeline=16, requests=args.requests)
    ngx_server = [
        str(root / "usr/sbin/nginx"),
        "-e",
        "stderr",
        "-p",
        f"{root}/srv/nginx/",
        "-c",
        f"{root}/srv/nginx/nginx.conf",
    ]
    redis_server = [str(root / "usr/bin/redis-server"), str(root / "etc/virtbench/redis.conf")]
    hand: dict[str, list[float]] = {}

    def hand_round() -> None:
        for _ in range(args.runs):
            m = by_hand(ngx_server, nginx.PORT, nginx.client("127.0.0.1", np, 30))
            hand.setdefault("nginx.requests_per_s", []).append(m["requests_per_s"])
            m = by_hand(redis_server, redis.PORT, redis.client("127.0.0.1", rp, 30))
            for k in ("get.requests_per_s", "set.requests_per_s"):
                hand.setdefault(f"redis.{k}", []).append(m[k])

    hand_round()
    vb = virtbench(args.runs, args.duration, args.requests)
    hand_round()
    worst = 0.0
    for key, values in hand.items():
        h, v = statistics.median(values), statistics.median(vb[key])
        ratio = v / h
        worst = max(worst, abs(ratio - 1))
        print(
            f"{key:26} by hand {h:12.0f} (n={len(values)})   virtbench {v:12.0f} "
            f"(n={len(vb[key])})   ratio {ratio:.3f}",
            flush=True,
        )
    print(f"largest deviation {worst * 100:.1f}% (target <= 10%)")


if __name__ == "__main__":
    main()
