"""Real unikernels through S1's parts: images built elsewhere from their projects' own
sources (Unikraft 0.16.3: the catalog's helloworld-c, native/http-c with lwIP, and nginx
1.15 with musl and lwIP, its configuration in an initramfs; docs/images.md says how to
build them), handed to virtbench as a user would and run under QEMU TCG (this host's KVM
cannot boot them), marked emulated, beside crun.

virtbench cannot build or fetch them, so these tests find them in the directory
VIRTBENCH_REAL_IMAGES names (else `<cache>/real-images`), with the file names below, and
skip saying so where they are absent, like the tests of VMMs Debian lacks.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.integration.conftest import cli, labelled, run_id_of

from virtbench.paths import Paths
from virtbench.store import Store

FILES = {
    "hello": "hello.elf",
    "http": "http-c.elf",
    "nginx": "nginx.elf",
    "nginx-initrd": "nginx-initrd.cpio",
}


@pytest.fixture(scope="module")
def images() -> dict[str, Path]:
    """The real images, or a skip naming where they were looked for."""
    where = Path(os.environ.get("VIRTBENCH_REAL_IMAGES") or Paths.from_env().cache / "real-images")
    found = {k: where / name for k, name in FILES.items()}
    missing = [str(p) for p in found.values() if not p.is_file()]
    if missing:
        pytest.skip(
            f"no real unikernel images ({', '.join(missing)} absent; build them as "
            "docs/images.md says and set VIRTBENCH_REAL_IMAGES)"
        )
    return found


def tables(images: dict[str, Path], firmware: str = "") -> str:
    """The three images as named runtimes on QEMU q35 under TCG (the defaults otherwise)."""
    fw = f'firmware = "{firmware}"\n' if firmware else ""
    common = f'driver = "qemu:q35:tcg"\nguest = "image"\npreset = "unikraft"\n{fw}'
    return (
        f'[runtime.uk-hello]\n{common}kernel = "{images["hello"]}"\n\n'
        f'[runtime.uk-http]\n{common}kernel = "{images["http"]}"\nserves = "http"\n'
        "port = 8080\nmemory_mib = 64\n\n"
        f'[runtime.uk-nginx]\n{common}kernel = "{images["nginx"]}"\n'
        f'initrd = "{images["nginx-initrd"]}"\ncmdline = "-c /nginx/conf/nginx.conf"\n'
        'serves = "http"\nport = 80\nmemory_mib = 128\n\n'
    )


S1_PARTS = """
[[experiment]]
type = "boot"
workloads = ["hello"]
runs = 3
warmups = 1
runtimes = ["uk-hello", "crun"]

[[experiment]]
type = "boot"
workloads = ["sleep"]
runs = 3
warmups = 1
runtimes = ["uk-http", "uk-nginx", "crun"]

[[experiment]]
type = "density"
workload = "sleep"
instances = 4
instances_per_benchmark = 2
runs = 1
runtimes = ["uk-http", "crun"]

[[experiment]]
type = "scalability"
worker = "nginx"
background = "nginx"
background_network = "bridge"
instances_per_benchmark = 2
benchmark_times = 1
runs = 1
runtimes = ["uk-nginx", "crun"]
[experiment.params.nginx]
connections = 10
threads = 2
duration_s = 2

[[experiment]]
type = "isolation"
worker = "nginx"
attacker_runtime = "crun"
attackers = ["cpu"]
placements = ["same-cpu"]
runs = 1
ci_target_pct = 0
runtimes = ["uk-nginx"]
[experiment.params.nginx]
connections = 10
threads = 2
duration_s = 2
"""


def test_real_image_unikraft_runs_every_s1_part_beside_crun(env, tmp_path, images):
    """With virtbench's defaults (no firmware line): the hello image powers off, the
    servers get ready on their ports, density piles them up, nginx is measured while idle
    nginx images pile up and next to crun attackers; every figure is there, emulated,
    with the firmware it booted; nothing is left."""
    spec = tmp_path / "s1-uk.toml"
    spec.write_text(
        'name = "s1-uk"\nruntimes = ["uk-hello", "uk-http", "uk-nginx", "crun"]\n'
        '[instance]\nnetwork = "bridge"\n\n' + tables(images) + S1_PARTS
    )
    res = cli("run", str(spec), env=env, timeout=1500)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [s for s in Store(tmp_path / "results").samples(rid) if not s.warmup]
    assert not [s.error for s in samples if s.error], [s.error for s in samples if s.error][:3]

    def values(runtime: str, metric: str, experiment: str) -> list[float]:
        return [
            s.value
            for s in samples
            if s.runtime == runtime
            and s.metric == metric
            and s.experiment == experiment
            and s.value is not None
        ]

    assert len(values("uk-hello", "boot.spawn_to_exit", "boot")) == 3
    for rt in ("uk-http", "uk-nginx"):
        assert len(values(rt, "boot.spawn_to_ready", "boot")) == 3, rt
    assert values("uk-http", "density.pss", "density")
    assert values("uk-nginx", "requests_per_s", "scalability")
    pile = {
        s.background
        for s in samples
        if s.runtime == "uk-nginx"
        and s.experiment == "scalability"
        and s.metric == "requests_per_s"
    }
    assert pile == {0, 2}, pile  # measured alone, then beside two idle nginx images
    attacked = [s for s in samples if s.experiment == "isolation" and s.attacker == "cpu"]
    assert attacked and all(s.params.get("attacker_runtime") == "crun" for s in attacked)
    guests = [s for s in samples if s.runtime.startswith("uk-") and s.experiment != "image"]
    assert guests and all(s.emulated for s in guests)
    assert {s.params.get("firmware") for s in guests} == {"seabios"}
    assert labelled(rid) == []


def test_real_image_on_qboot_ends_with_its_crash_line_and_status_1(env, tmp_path, images):
    """Unikraft 0.16 stops at an assertion on qboot's memory map: told to boot qboot, the
    run says the image measured nothing, quoting the console's crash line, and exits 1,
    although each failed boot's launch and teardown were recorded."""
    spec = tmp_path / "qboot.toml"
    spec.write_text(
        'name = "qboot"\nruntimes = ["uk-http"]\n[instance]\nnetwork = "bridge"\n'
        + tables(images, firmware="qboot")
        + '[[experiment]]\ntype = "boot"\n'
        'workloads = ["sleep"]\nruns = 2\nwarmups = 0\ntimeout_s = 30\n'
    )
    res = cli("run", str(spec), env=env, timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: uk-http measured nothing in "), errors
    assert "crashed: " in errors[0] and "Assertion failure" in errors[0], errors[0]
    rid = run_id_of(res.stdout)
    assert labelled(rid) == []
