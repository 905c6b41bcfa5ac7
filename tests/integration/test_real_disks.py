"""Real unikernels that boot from their own disk, under QEMU TCG (this host's nested KVM
boots neither): Nanos (its raw image: boot sector, kernel, file system; it writes to its
disk at boot and takes its address by DHCP from the run's bridge) and OSv (its QCOW2
usr.img: booted by SeaBIOS with its command line written on each instance's layer, or
its loader given as the kernel), beside crun.

virtbench cannot build them, so these tests find them in `<VIRTBENCH_REAL_IMAGES>/nanos/`
(hello.img: a C program's; http.img: Nanos's test web server on 8080, address by DHCP)
and `.../osv/` (hello.img: a C hello; http.img: the Go server of osv-apps on 8080;
loader-stripped.elf), built as docs/images.md says, and skip saying so without them.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.realimages import images, run_beside_crun, values


def table(name: str, preset: str, disk: Path, extra: str = "") -> str:
    return (
        f'[runtime.{name}]\ndriver = "qemu:q35:tcg"\nguest = "image"\npreset = "{preset}"\n'
        f'disk = "{disk}"\nmemory_mib = 256\n{extra}\n'
    )


def experiments(hello: list[str], served: list[str]) -> str:
    return f"""
[[experiment]]
type = "boot"
workloads = ["hello"]
runs = 3
warmups = 0
runtimes = {json.dumps([*hello, "crun"])}

[[experiment]]
type = "density"
workload = "sleep"
instances = 2
instances_per_benchmark = 1
runs = 1
runtimes = {json.dumps([*served, "crun"])}

[[experiment]]
type = "throughput"
workloads = ["nginx"]
runs = 1
runtimes = {json.dumps([*served, "crun"])}
[experiment.params.nginx]
duration_s = 2
connections = 8
threads = 1
"""


def served(samples: list, runtime: str) -> None:
    """Two instances of it ran at once, and wrk measured it."""
    reached = values(samples, runtime, "density.reached")
    assert reached == [2], reached
    rps = values(samples, runtime, "requests_per_s")
    assert rps and all(v > 0 for v in rps), rps


def test_real_image_nanos_boots_its_disk_takes_dhcp_and_runs_two_at_once(env, tmp_path):
    d = images("nanos", ("hello.img", "http.img"))
    tables = table("nanos-hello", "nanos", d / "hello.img")
    tables += table("nanos-http", "nanos", d / "http.img", 'serves = "http"\nport = 8080\n')
    names = ["nanos-hello", "nanos-http"]
    _, samples = run_beside_crun(env, tmp_path, names, tables + experiments(names[:1], names[1:]))
    hello = values(samples, "nanos-hello", "boot.spawn_to_exit")
    assert len(hello) == 3 and all(v > 0 for v in hello), hello
    served(samples, "nanos-http")


def test_real_image_osv_boots_its_disk_or_its_loader_and_serves(env, tmp_path):
    d = images("osv", ("hello.img", "http.img", "loader-stripped.elf"))
    loader = f'kernel = "{d / "loader-stripped.elf"}"\n'
    http = 'cmdline = "--rootfs=rofs /httpserver.so"\nserves = "http"\nport = 8080\n'
    tables = table("osv-hello", "osv", d / "hello.img", 'cmdline = "/hello"\n')
    tables += table("osv-hello-k", "osv", d / "hello.img", f'cmdline = "/hello"\n{loader}')
    tables += table("osv-http", "osv", d / "http.img", http)
    tables += table("osv-http-k", "osv", d / "http.img", http + loader)
    hello, served_by = ["osv-hello", "osv-hello-k"], ["osv-http", "osv-http-k"]
    body = tables + experiments(hello, served_by)
    _, samples = run_beside_crun(env, tmp_path, hello + served_by, body)
    for name in ("osv-hello", "osv-hello-k"):
        exits = values(samples, name, "boot.spawn_to_exit")
        assert len(exits) == 3 and all(v > 0 for v in exits), (name, exits)
    served(samples, "osv-http")
    served(samples, "osv-http-k")
