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
import os
from pathlib import Path

import pytest
from tests.integration.conftest import cli, labelled, run_id_of

from virtbench.paths import Paths
from virtbench.store import Store

FILES = {
    "nanos": ("hello.img", "http.img"),
    "osv": ("hello.img", "http.img", "loader-stripped.elf"),
}


def images(kind: str) -> Path:
    base = os.environ.get("VIRTBENCH_REAL_IMAGES") or Paths.from_env().cache / "real-images"
    where = Path(base) / kind
    missing = [f for f in FILES[kind] if not (where / f).is_file()]
    if missing:
        pytest.skip(f"no real {kind} images in {where} ({', '.join(missing)} absent)")
    return where


def table(name: str, preset: str, disk: Path, extra: str = "") -> str:
    return (
        f'[runtime.{name}]\ndriver = "qemu:q35:tcg"\nguest = "image"\npreset = "{preset}"\n'
        f'disk = "{disk}"\nmemory_mib = 256\n{extra}\n'
    )


def run(env: dict[str, str], tmp_path: Path, tables: str, experiments: str) -> list:
    """`virtbench run` of the tables' runtimes and crun; the samples, none failed, and
    nothing of the run left."""
    names = [ln[9:-1] for ln in tables.splitlines() if ln.startswith("[runtime.")]
    spec = tmp_path / "disks.toml"
    spec.write_text(
        f'name = "disks"\nruntimes = {json.dumps([*names, "crun"])}\n'
        f'[instance]\nnetwork = "bridge"\n{tables}{experiments}'
    )
    res = cli("run", str(spec), env=env, timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [s for s in Store(tmp_path / "results").samples(rid) if not s.warmup]
    assert not [s for s in samples if s.error], [s.error for s in samples if s.error][:3]
    assert labelled(rid) == []
    assert not list(Path(env["VIRTBENCH_STATE_DIR"]).rglob("*.disk.qcow2"))
    return samples


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


def values(samples: list, runtime: str, metric: str) -> list[float]:
    return [s.value for s in samples if s.runtime == runtime and s.metric == metric]


def served(samples: list, runtime: str) -> None:
    """Two instances of it ran at once, and wrk measured it."""
    reached = values(samples, runtime, "density.reached")
    assert reached == [2], reached
    rps = values(samples, runtime, "requests_per_s")
    assert rps and all(v > 0 for v in rps), rps


def test_real_image_nanos_boots_its_disk_takes_dhcp_and_runs_two_at_once(env, tmp_path):
    d = images("nanos")
    tables = table("nanos-hello", "nanos", d / "hello.img")
    tables += table("nanos-http", "nanos", d / "http.img", 'serves = "http"\nport = 8080\n')
    samples = run(env, tmp_path, tables, experiments(["nanos-hello"], ["nanos-http"]))
    hello = values(samples, "nanos-hello", "boot.spawn_to_exit")
    assert len(hello) == 3 and all(v > 0 for v in hello), hello
    served(samples, "nanos-http")


def test_real_image_osv_boots_its_disk_or_its_loader_and_serves(env, tmp_path):
    d = images("osv")
    loader = f'kernel = "{d / "loader-stripped.elf"}"\n'
    http = 'cmdline = "--rootfs=rofs /httpserver.so"\nserves = "http"\nport = 8080\n'
    tables = table("osv-hello", "osv", d / "hello.img", 'cmdline = "/hello"\n')
    tables += table("osv-hello-k", "osv", d / "hello.img", f'cmdline = "/hello"\n{loader}')
    tables += table("osv-http", "osv", d / "http.img", http)
    tables += table("osv-http-k", "osv", d / "http.img", http + loader)
    samples = run(
        env,
        tmp_path,
        tables,
        experiments(["osv-hello", "osv-hello-k"], ["osv-http", "osv-http-k"]),
    )
    for name in ("osv-hello", "osv-hello-k"):
        exits = values(samples, name, "boot.spawn_to_exit")
        assert len(exits) == 3 and all(v > 0 for v in exits), (name, exits)
    served(samples, "osv-http")
    served(samples, "osv-http-k")
