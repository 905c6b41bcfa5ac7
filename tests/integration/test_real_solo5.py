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

import json
import os
from pathlib import Path

import pytest
from tests.integration.conftest import cli, labelled, run_id_of

from virtbench.paths import Paths
from virtbench.store import Store

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
    """The directory holding the real tenders and unikernels, or a skip naming it."""
    base = os.environ.get("VIRTBENCH_REAL_IMAGES") or Paths.from_env().cache / "real-images"
    where = Path(base) / "solo5"
    missing = [f for f in FILES if not (where / f).is_file()]
    if missing:
        pytest.skip(f"no Solo5 tenders and unikernels in {where} ({', '.join(missing)} absent)")
    return where


def tables(d: Path) -> str:
    out = ""
    for t in ("hvt", "spt"):
        common = f'driver = "solo5-{t}"\nbinary = "{d}/solo5-{t}"\nmemory_mib = 16\n'
        out += f'[runtime.s5-hello-{t}]\n{common}kernel = "{d}/test_hello.{t}"\n'
        out += 'cmdline = "Hello_Solo5"\n\n'
        out += f'[runtime.s5-ping-{t}]\n{common}kernel = "{d}/test_ping.{t}"\n'
        out += 'preset = "solo5"\nready = "Serving ping"\n\n'
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
"""


def test_real_image_solo5_tenders_boot_pile_up_and_leave_nothing(env, tmp_path, solo5):
    """hello to its exit (the unikernel's `solo5_exit(0)`), a networked unikernel to its
    console's ready line on a tap of the run's bridge with its address from the preset,
    and a pile-up's memory, on both tenders beside crun; nothing left after."""
    spec = tmp_path / "solo5.toml"
    names = [f"s5-{kind}-{t}" for kind in ("hello", "ping") for t in ("hvt", "spt")]
    head = f'name = "solo5"\nruntimes = {json.dumps([*names, "crun"])}\n'
    spec.write_text(head + tables(solo5) + SPEC)
    res = cli("run", str(spec), env=env, timeout=1200)
    assert res.returncode == 0, res.stdout + res.stderr
    rid = run_id_of(res.stdout)
    samples = [s for s in Store(tmp_path / "results").samples(rid) if not s.warmup]
    assert not [s for s in samples if s.error], [s.error for s in samples if s.error][:3]

    def values(runtime: str, metric: str) -> list[float]:
        return [s.value for s in samples if s.runtime == runtime and s.metric == metric]

    for t in ("hvt", "spt"):
        exits = values(f"s5-hello-{t}", "boot.spawn_to_exit")
        assert len(exits) == 5 and all(0 < v < 5000 for v in exits), exits
        ready = values(f"s5-ping-{t}", "boot.spawn_to_ready")
        assert len(ready) == 5 and all(0 < v < 5000 for v in ready), ready
        assert len(values(f"s5-ping-{t}", "density.cgroup_memory")) == 6
    assert not (tmp_path / "state" / "runs" / rid).exists()
    assert labelled(rid) == []
