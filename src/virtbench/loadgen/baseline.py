"""The pair's baselines: what the path between the load generator and this host gives
before any instance is measured over it.

  round trip   ping from the load generator to this host's address, idle: `count`
               echo requests (the latency workload's ICMP test and its parser)
  link         native to native over the same path: iperf3's server here on this
               host's address, its client there, for `seconds` (TCP, one stream)

They go in the run's environment (`loadgen`) beside the figures they qualify: a server's
requests per second mean little over a link that carries less, and a latency figure
includes the idle round trip.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from virtbench.host import proc
from virtbench.loadgen.ssh import Ssh
from virtbench.workloads import ParseError, latency

PING_COUNT = 20
LINK_SECONDS = 2


def round_trip(ssh: Ssh, address: str) -> dict[str, Any]:
    """ping's figures from the load generator to `address` (us), or why not."""
    argv = ["ping", "-q", "-n", "-c", str(PING_COUNT), "-i", "0.05", "-W", "2", address]
    res = ssh.run(argv, 60)
    try:
        figures = latency.parse(res.stdout + res.stderr)
    except ParseError:
        return {"error": f"ping: {res.brief()}"}
    return {m.name.replace("icmp.", ""): m.value for m in figures}


def _free_port(address: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def link(ssh: Ssh, address: str) -> dict[str, Any]:
    """iperf3 from the load generator to a server on this host's `address`: Mbit/s
    received, or why not."""
    port = _free_port(address)
    server = proc.spawn(["iperf3", "-s", "-1", "-B", address, "-p", str(port)])
    try:
        argv = ["iperf3", "-c", address, "-p", str(port), "-t", str(LINK_SECONDS), "-J"]
        for _ in range(20):  # until the server listens (a refused connection: again)
            res = ssh.run(argv, LINK_SECONDS + 30)
            if res.returncode == 0 or "refused" not in res.stdout + res.stderr:
                break
        try:
            bits = json.loads(res.stdout)["end"]["sum_received"]["bits_per_second"]
        except (ValueError, KeyError, TypeError):
            return {"error": f"iperf3: {res.brief()}"}
        return {"mbit_s": round(bits / 1e6, 1), "seconds": LINK_SECONDS}
    finally:
        proc.stop(server, 10)


def measure(ssh: Ssh, address: str) -> dict[str, Any]:
    """Both baselines of the path to `address`."""
    return {"round_trip_us": round_trip(ssh, address), "link": link(ssh, address)}


FACTS = (
    "sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1; nproc --all; "
    # kB as the kernel writes it, times 1024 here: awk's arithmetic is not the same on
    # every host (mawk, Debian's default, prints large products in exponent form)
    "sed -n 's/^MemTotal:[[:space:]]*\\([0-9]*\\) kB$/\\1/p' /proc/meminfo; uname -r; "
    "cat /sys/devices/system/cpu/smt/active 2>/dev/null || echo -; "
    "test -c /dev/kvm && echo yes || echo no"
)


def host_facts(ssh: Ssh) -> dict[str, Any]:
    """The load generator's own fingerprint (CPU model and count, memory, kernel, SMT,
    KVM), in the environment's words, or why not."""
    res = ssh.shell(FACTS)
    lines = res.stdout.splitlines()
    if res.returncode != 0 or len(lines) != 6:
        return {"error": f"its facts: {res.brief()}"}
    model, count, memory, kernel, smt, kvm = lines
    return {
        "cpu_model": model,
        "cpu_count": int(count),
        "memory_bytes": int(memory) * 1024,
        "kernel": kernel,
        "smt": {"1": True, "0": False}.get(smt, smt),
        "kvm": kvm == "yes",
    }


def _round_trip_words(rtt: dict[str, Any]) -> str:
    if "error" in rtt:
        return f"idle round trip not measured ({rtt['error']})"
    return (
        f"idle round trip {rtt['rtt_avg']:.0f} us on average ({rtt['rtt_min']:.0f}-"
        f"{rtt['rtt_max']:.0f} us, {rtt['loss_pct']:g}% lost)"
    )


def describe(facts: dict[str, Any]) -> str:
    """The run's load generator in a line: which host, what it is, and the pair's
    baselines."""
    own = facts.get("facts", {})
    what = (
        f" ({own['cpu_model']} x{own['cpu_count']}, kernel {own['kernel']})"
        if "cpu_model" in own
        else ""
    )
    link_ = facts.get("link", {})
    link_words = (
        f"link {link_['mbit_s']:,.0f} Mbit/s native to native (iperf3, {link_['seconds']} s)"
        if "mbit_s" in link_
        else f"link not measured ({link_.get('error', 'no figure')})"
    )
    return (
        f"clients on the load generator {facts.get('host')}{what}, where this host is "
        f"{facts.get('this_host_there')}; {_round_trip_words(facts.get('round_trip_us', {}))}; "
        f"{link_words}"
    )
