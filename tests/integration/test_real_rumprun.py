"""Real Rumprun unikernels (rumpkernel/rumprun, hw platform, `rumprun-bake hw_virtio`) as
images on QEMU q35 under TCG (`preset = "rumprun"`: virtbench writes the JSON document
Rumprun reads, and reads the program's exit from its console, since QEMU stays up after
Rumprun halts), beside crun.

virtbench cannot build or fetch them, so this test finds them in
`<VIRTBENCH_REAL_IMAGES>/rumprun/` (else `<cache>/real-images/rumprun`), built as
docs/images.md says: `hello.bin` (prints a line, exits 0) and `http.bin` (an HTTP server
on the port its argv[1] names), and skips saying so where they are absent, like the
other real-image tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.integration.realimages import images, run_beside_crun, values

FILES = ("hello.bin", "http.bin")


@pytest.fixture(scope="module")
def rumprun() -> Path:
    """The directory holding the real Rumprun images, or a skip naming what is missing."""
    return images("rumprun", FILES)


def tables(d: Path) -> str:
    common = 'driver = "qemu:q35:tcg"\nguest = "image"\npreset = "rumprun"\n'
    return (
        f'[runtime.rr-hello]\n{common}kernel = "{d}/hello.bin"\n\n'
        f'[runtime.rr-http]\n{common}kernel = "{d}/http.bin"\n'
        'serves = "http"\nport = 8080\ncmdline = "8080"\n\n'
    )


SPEC = """
[[experiment]]
type = "boot"
workloads = ["hello"]
runs = 3
warmups = 1
runtimes = ["rr-hello", "crun"]

[[experiment]]
type = "boot"
workloads = ["sleep"]
runs = 3
warmups = 1
runtimes = ["rr-http", "crun"]

[[experiment]]
type = "throughput"
workloads = ["nginx"]
runs = 1
warmups = 0
runtimes = ["rr-http", "crun"]
[experiment.params.nginx]
connections = 10
threads = 2
duration_s = 2
"""


def test_real_image_rumprun_boots_serves_and_leaves_nothing(env, tmp_path, rumprun):
    """On the run's bridge, each image with its address in the JSON document: hello to
    its console's exit (`_exit(0)`, then `halted`: QEMU is ended there), the HTTP
    server to its port answering, and wrk against it, beside crun; every figure there,
    emulated, and nothing left (no QEMU either)."""
    _, samples = run_beside_crun(env, tmp_path, ["rr-hello", "rr-http"], tables(rumprun) + SPEC)
    exits = values(samples, "rr-hello", "boot.spawn_to_exit")
    assert len(exits) == 3 and all(0 < v < 60_000 for v in exits), exits
    ready = values(samples, "rr-http", "boot.spawn_to_ready")
    assert len(ready) == 3 and all(0 < v < 60_000 for v in ready), ready
    rps = values(samples, "rr-http", "requests_per_s")
    assert rps and all(v > 0 for v in rps), rps
    assert values(samples, "crun", "requests_per_s")
    guests = [s for s in samples if s.runtime.startswith("rr-") and s.experiment != "image"]
    assert guests and all(s.emulated for s in guests)
