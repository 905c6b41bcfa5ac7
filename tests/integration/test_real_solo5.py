"""Real Solo5 unikernels under their own tenders: `solo5-hvt` (a KVM VM of the tender's
making: it runs under this host's nested KVM, where no other unikernel does) and
`solo5-spt` (the unikernel as a seccomp-sandboxed process), beside crun.

Solo5 is not in Debian and virtbench does not build it, so these tests find the tenders
and unikernels in `<VIRTBENCH_REAL_IMAGES>/solo5/` (else `<cache>/real-images/solo5`),
built as docs/images.md says (Solo5 0.12's `./configure.sh && make`: its tenders, and its
test_hello; test_ping is its test_net taking its address from `--ipv4=` as MirageOS's
do), and skip saying so where they are absent, like the other real-image tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.integration.realimages import images, run_beside_crun, values

FILES = (
    "solo5-hvt",
    "solo5-spt",
    "test_hello.hvt",
    "test_hello.spt",
    "test_ping.hvt",
    "test_ping.spt",
)


@pytest.fixture(scope="module")
def solo5() -> Path:
    """The directory holding the real tenders and unikernels, or a skip naming them."""
    return images("solo5", FILES)


def tables(d: Path) -> str:
    out = ""
    for t in ("hvt", "spt"):
        common = f'driver = "solo5-{t}"\nbinary = "{d}/solo5-{t}"\nmemory_mib = 16\n'
        out += f'[runtime.s5-hello-{t}]\n{common}kernel = "{d}/test_hello.{t}"\n'
        out += 'cmdline = "Hello_Solo5"\n\n'
        out += f'[runtime.s5-ping-{t}]\n{common}kernel = "{d}/test_ping.{t}"\n'
        # hvt ready by its console line; spt by its first echo reply
        ready = 'ready = "Serving ping"\n' if t == "hvt" else ""
        out += f'preset = "solo5"\nserves = "ping"\n{ready}\n'
    return out


SPEC = """
[[experiment]]
type = "boot"
workloads = ["hello"]
runs = 5
warmups = 1
runtimes = ["s5-hello-hvt", "s5-hello-spt", "crun"]

[[experiment]]
type = "boot"
workloads = ["sleep"]
runs = 5
warmups = 1
runtimes = ["s5-ping-hvt", "s5-ping-spt", "crun"]

[[experiment]]
type = "density"
workload = "sleep"
instances = 6
instances_per_benchmark = 3
runs = 1
runtimes = ["s5-ping-hvt", "s5-ping-spt", "crun"]

[[experiment]]
type = "throughput"
workloads = ["latency"]
runs = 2
runtimes = ["s5-ping-hvt", "s5-ping-spt", "crun"]
[experiment.params.latency]
tests = ["icmp", "udp"]
sizes = [64]
count = 200
ping_count = 20
ping_interval_s = 0.02
"""


def test_real_image_solo5_tenders_boot_pile_up_and_leave_nothing(env, tmp_path, solo5):
    """hello to its exit (the unikernel's `solo5_exit(0)`), a networked unikernel to its
    console's ready line (hvt) or its first echo reply (spt) on a tap of the run's bridge
    with its address from the preset, a pile-up's memory, and its ping round trip (the
    only test of latency it answers), on both tenders beside crun; nothing left after."""
    names = [f"s5-{kind}-{t}" for kind in ("hello", "ping") for t in ("hvt", "spt")]
    _, samples = run_beside_crun(env, tmp_path, names, tables(solo5) + SPEC)
    for t in ("hvt", "spt"):
        exits = values(samples, f"s5-hello-{t}", "boot.spawn_to_exit")
        assert len(exits) == 5 and all(0 < v < 5000 for v in exits), exits
        ready = values(samples, f"s5-ping-{t}", "boot.spawn_to_ready")
        assert len(ready) == 5 and all(0 < v < 5000 for v in ready), ready
        assert len(values(samples, f"s5-ping-{t}", "density.cgroup_memory")) == 6
        rtt = values(samples, f"s5-ping-{t}", "icmp.rtt_avg")  # it answers ping only
        assert len(rtt) == 2 and all(v > 0 for v in rtt), rtt
        assert not [s for s in samples if s.runtime == f"s5-ping-{t}" and "udp" in s.metric]
    assert len(values(samples, "crun", "udp.64B.rtt_p50")) == 2  # crun runs every test
