"""KSM as the host had it, whatever ends a run that shares pages (density's `sharing =
["off", "ksm"]`): Ctrl-C while it is on puts it back; kill -9 leaves it to `virtbench
clean`, which puts it back and says so."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.conftest import need
from tests.integration.conftest import cli, start_run

from virtbench.host import ksm

SPEC = """
name = "sharing"
runtimes = ["crun"]
[[experiment]]
type = "density"
instances = 3
instances_per_benchmark = 3
memory_settle_s = 0
sharing = ["off", "ksm"]
"""


def _settings() -> dict[str, str]:
    return {k: (ksm.ROOT / k).read_text().strip() for k in ksm.SETTINGS}


def _until_on(p, deadline_s: float = 300) -> None:
    """Until the run has switched KSM on (it must not end first)."""
    deadline = time.monotonic() + deadline_s
    while (ksm.ROOT / "run").read_text().strip() != "1":
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[0]
        time.sleep(0.005)


def test_ctrl_c_or_kill_9_while_pages_are_shared_leaves_ksm_as_the_host_had_it(env, tmp_path):
    need(ksm.available() is None, f"{ksm.available()}")
    before = _settings()
    need(before["run"] != "1", "KSM is on on this host already: nothing to tell apart")
    spec = tmp_path / "sharing.toml"
    spec.write_text(SPEC)
    p, _ = start_run(str(spec), env=env)
    _until_on(p)
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=300)
    assert p.returncode == 130, out
    assert _settings() == before
    p, rid = start_run(str(spec), env=env)
    _until_on(p)
    p.kill()
    p.communicate(timeout=60)
    assert _settings()["run"] == "1"
    state = Path(env["VIRTBENCH_STATE_DIR"]) / "runs" / rid / ksm.FILE
    assert state.is_file()
    dry = cli("clean", "--run", rid, "--dry-run", env=env)
    assert "would put back ksm" in dry.stdout and "run" in dry.stdout, dry.stdout
    res = cli("clean", "--run", rid, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "putting back ksm" in res.stdout, res.stdout
    assert _settings() == before
