"""Integration fixtures: real runtimes, real cgroups, real networks (root)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import need

from virtbench import runtimes
from virtbench.artifacts import Artifact, build_minimal_rootfs
from virtbench.host import cgroups, systemd
from virtbench.host.state import RunState
from virtbench.measure.probe import ProbeListener
from virtbench.paths import Paths
from virtbench.run import cleanup
from virtbench.runtimes.base import Runtime, RuntimeContext

VIRTBENCH = [sys.executable, "-m", "virtbench.cli"]
pytestmark = pytest.mark.root


@pytest.fixture(autouse=True)
def _root() -> None:
    need(os.geteuid() == 0, "integration tests need root")


def short_state_dir() -> Path:
    """A state directory as short as /run/virtbench: a unix socket's path (a run's
    containerd's) holds at most 107 bytes, and a test's tmp_path can take most of them."""
    state = Path(tempfile.mkdtemp(prefix="vb", dir="/tmp"))
    state.chmod(0o755)
    return state


@pytest.fixture
def paths(tmp_path: Path) -> Iterator[Paths]:
    base = Paths.from_env()
    # unprivileged LXD containers under the state dir need every parent searchable
    for d in [tmp_path, *tmp_path.parents]:
        d.chmod(d.stat().st_mode | stat.S_IXOTH)
    state = short_state_dir()
    yield Paths(state=state, cache=base.cache, guest_src=base.guest_src, data=tmp_path / "data")
    shutil.rmtree(state, ignore_errors=True)


@pytest.fixture(scope="session")
def artifact() -> Artifact:
    base = Paths.from_env()
    return build_minimal_rootfs(base.guest_src, base.cache)


@pytest.fixture
def ctx(paths: Paths, artifact) -> Iterator[RuntimeContext]:
    run_id = "t" + os.urandom(3).hex()[:5]
    state = RunState(paths.run_dir(run_id)).open()
    probe = ProbeListener(state.dir / "probe")
    layout = cgroups.Layout.detect()
    c = RuntimeContext(run_id, state, paths, layout, probe=probe, rootfs=artifact.path)
    yield c
    for d in reversed(vars(c).pop("test_drivers", [])):
        d.close()
    c.daemons.close()
    if c.bridge is not None:
        c.bridge.close()
    probe.close()
    state.close()
    left = cleanup.scan(paths, run_id=run_id, include_live=True)
    cleanup.remove_empty_parents(layout)  # as a run's end does
    assert not left, f"leftovers after test: {[str(x) for x in left]}"


def driver(label: str, ctx: RuntimeContext, **options: object) -> Runtime:
    """The driver for `label` on `ctx`; closed (instances stopped, set-up undone) with ctx."""
    cls = runtimes.get(label)
    opts = cls.Options(**{**runtimes.options_for(label, {}), **options})
    avail = cls.available(opts)
    if not avail.ok and avail.host_settings:  # the host's choice: never changed by virtbench
        pytest.skip(f"runtime {label} unavailable by this host's settings: {avail.reason}")
    need(avail.ok, f"runtime {label} unavailable: {avail.reason}")
    rt = cls(ctx, opts, label=label)
    # Kept on ctx itself: pytest may import this conftest twice under different names.
    vars(ctx).setdefault("test_drivers", []).append(rt)
    return rt


def vmm_binary(vmm: str) -> str:
    """A VMM not in Debian (firecracker, cloud-hypervisor): its binary, named by
    VIRTBENCH_FIRECRACKER / VIRTBENCH_CLOUD_HYPERVISOR or on PATH; the test skips, saying
    so, where neither (set-up cannot install them)."""
    var = "VIRTBENCH_" + vmm.upper().replace("-", "_")
    binary = os.environ.get(var) or shutil.which(vmm)
    if not binary:
        pytest.skip(f"{vmm} not on PATH and {var} not set (not in Debian: see `virtbench doctor`)")
    return binary


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A CLI run's own state directory (short, as /run/virtbench is, for the unix sockets
    in it; reached as tmp_path/state too) and results store."""
    state = short_state_dir()
    (tmp_path / "state").symlink_to(state)
    yield {"VIRTBENCH_STATE_DIR": str(state), "VIRTBENCH_RESULTS": str(tmp_path / "results")}
    shutil.rmtree(state, ignore_errors=True)


def run_id_of(output: str) -> str:
    m = re.search(r"run ([a-z0-9]{6}) started", output)
    assert m, output
    return m.group(1)


def cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*VIRTBENCH, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {}), "COLUMNS": "200"},
    )


def sweep(*values: str, long: bool) -> Any:
    """A case of a parametrized test, `make test-long`'s where `long` (the rest of a sweep
    whose first cases `make test` runs)."""
    return pytest.param(*values, marks=pytest.mark.long if long else ())


def run_cgroups(rid: str) -> list[Path]:
    """The run's instance cgroups: a glob, quick enough to poll while instances start
    (labelled() asks every engine and takes a second or more)."""
    return cgroups.Layout.detect().of_run(rid)


def start_run(*args: str, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`virtbench run ARGS` in the background, as from a terminal (a shell's background job,
    e.g. `make test &`, would hand down SIGINT ignored, and Python would then install no
    KeyboardInterrupt handler); returns it and its run id once it says it started."""
    p = subprocess.Popen(
        [*VIRTBENCH, "run", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **env, "COLUMNS": "200"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert p.stdout is not None
    seen = ""
    while not re.search(r"run ([a-z0-9]{6}) started", seen):  # a leftovers warning may come first
        line = p.stdout.readline()
        assert line, seen
        seen += line
    return p, run_id_of(seen)


def clean_crashed(run_id: str, env: dict[str, str]) -> None:
    """`virtbench clean --run RUN` after the run was killed; then nothing of it is left
    (SIGKILLed VMMs may take a moment to be reaped)."""
    res = cli("clean", "--run", run_id, env=env)
    assert res.returncode == 0 and f"run {run_id} marked crashed" in res.stdout, res.stderr
    deadline = time.monotonic() + 10
    while labelled(run_id) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert labelled(run_id) == []


def labelled(run_id: str) -> list[str]:
    """Everything on the host carrying the run's label, found independently of run/cleanup.py."""
    found = []
    for binary in ("runc", "crun", "runsc"):
        out = subprocess.run([binary, "list", "--format", "json"], capture_output=True, text=True)
        for c in json.loads(out.stdout or "null") or []:
            if c["id"].startswith(f"vb-{run_id}-"):
                found.append(f"container {c['id']}")
    engines = {  # containers, networks and images, where the engine answers
        "docker": (
            ["ps", "-a", "--format", "{{.Names}}"],
            ["network", "ls", "--format", "{{.Name}}"],
            ["images", "--format", "{{.Repository}}:{{.Tag}}"],
        ),
        "podman": (
            ["ps", "-a", "--format", "{{.Names}}"],
            ["network", "ls", "--format", "{{.Name}}"],
            ["images", "--format", "{{.Repository}}:{{.Tag}}"],
        ),
    }
    for engine, queries in engines.items():
        if engine == "docker" and not Path("/var/run/docker.sock").exists():
            continue
        if shutil.which(engine) is None:
            continue
        for what in queries:
            out = subprocess.run(
                [engine, *what],
                capture_output=True,
                text=True,
                env={**os.environ, "DOCKER_API_VERSION": "1.41"},
            )
            names = [n.removeprefix("localhost/") for n in out.stdout.split()]
            found += [f"{engine} {what[0]} {n}" for n in names if n.startswith(f"vb-{run_id}-")]
    found += [f"cgroup {d}" for d in cgroups.Layout.detect().of_run(run_id)]
    if systemd.booted():  # the slices an engine placed instances in, as units
        found += [f"unit {u}" for u in systemd.run_units() if systemd.run_of(u) == run_id]
    links = json.loads(subprocess.run(["ip", "-j", "link"], capture_output=True, text=True).stdout)
    found += [f"link {x['ifname']}" for x in links if x["ifname"].startswith(f"vb-{run_id}-")]
    if Path("/run/netns").is_dir():
        found += [f"netns {n}" for n in os.listdir("/run/netns") if n.startswith(f"vb-{run_id}-")]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        for item in env.split(b"\0"):
            if item.startswith(f"VIRTBENCH_INSTANCE=vb-{run_id}-".encode()):
                found.append(f"process {pid} ({item.split(b'=', 1)[1].decode()})")
    mounts = Path("/proc/self/mountinfo").read_text()
    found += [  # named for the run, or inside its state directory (a run's containerd's)
        f"mount {line.split()[4]}"
        for line in mounts.splitlines()
        if f"/vb-{run_id}-" in line or f"/runs/{run_id}/" in line.split()[4]
    ]
    return found
