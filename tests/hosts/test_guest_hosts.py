"""virtbench on the host shapes users run: stock Debian guests (systemd as PID 1, cgroup v2,
AppArmor on, dockerd and the other services already running) built from Debian's packages
and booted here, the README's set-up and main job run inside, then a part of the suite.

`make test` runs the short form on Debian 12 (set-up, starting from the image's venv and
the guest programs built here, doctor, quickstart, a run killed amid its pile-up,
`clean`); `make test-hosts` runs more of the suite on Debian 12 and Debian 13, its set-up
from nothing. Each says how long its image took to build (once: it is cached) and its
guest to boot; under TCG every figure inside is emulated.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tests.hosts import boot, image, jobs

from virtbench.artifacts.rootfs import build_guest_programs
from virtbench.paths import Paths
from virtbench.workloads import task_source

pytestmark = [pytest.mark.root, pytest.mark.slow]

JOB_TIMEOUT_S = {"short": 3600, "full": 3 * 3600}


def _facts(path: Path) -> dict[str, str]:
    """A facts file's lines (jobs.FACTS) as key -> the rest of the line."""
    pairs = (ln.split(" ", 1) for ln in path.read_text().splitlines() if " " in ln)
    return dict(pairs)


def _services(path: Path) -> dict[str, str]:
    """service name -> "ActiveState MainPID", from a facts file."""
    found = {}
    for line in path.read_text().splitlines():
        if line.startswith("service "):
            _, name, state = line.split(" ", 2)
            found[name] = state
    return found


def _junit(path: Path) -> tuple[int, list[str]]:
    """(tests run, the names of those that failed or erred)."""
    suite = ET.parse(path).getroot()
    cases = suite.iter("testcase")
    bad, total = [], 0
    for case in cases:
        total += 1
        if case.find("failure") is not None or case.find("error") is not None:
            bad.append(f"{case.get('classname')}::{case.get('name')}")
    return total, bad


def _check(result: boot.Boot, job: jobs.Job) -> None:
    tail = result.tail()
    assert result.boot_s is not None, f"the guest never started its job:\n{tail}"
    assert result.rc == 0, f"the job did not finish (rc {result.rc}):\n{tail}"
    log = result.log()
    assert "setup rc=0" in log, f"make setup failed:\n{tail}"
    if job.demo:
        assert "demo rc=0" in log, f"make demo failed:\n{tail}"
    assert log.count("run rc=0") == len(job.runs), f"a virtbench run failed:\n{tail}"
    assert "clean rc=0" in log, f"virtbench clean failed:\n{tail}"
    if job.crash:  # killed mid-run (not ended first), then found crashed and cleaned
        crashed = re.search(r"^crash ([a-z0-9]{6}) rc=137$", log, re.M)
        assert crashed, f"the run to kill ended first, or never started:\n{tail}"
        assert f"run {crashed[1]} marked crashed" in log, f"clean missed it:\n{tail}"
    before, after = _facts(result.out / "facts.before"), _facts(result.out / "facts.after")
    assert before["init"] == "systemd" and before["cgroup"] == "cgroup2fs", before
    # the user's services as they were: same main process, same configuration
    assert _services(result.out / "facts.after") == _services(result.out / "facts.before")
    assert after["docker-config"] == before["docker-config"]
    assert after["firewall"].isdigit(), f"nftables' ruleset unread: {after['firewall']}"
    assert after["firewall"] == before["firewall"], "a podman network's chains were left"
    for what in ("units", "cgroups", "netns", "links", "mounts", "containers", "profiles"):
        assert after[what] == "0", f"{what} named vb-* left: {after[what]}"
    assert after["runs"] == "0", f"a run's state directory left: {after['runs']}"
    # the unit systemd delegates virtbench's cgroups to goes with the last run
    assert after["delegated"] == "0 0", f"virtbench.service left: {after['delegated']}"
    if job.tests:
        total, bad = _junit(result.out / "junit.xml")
        assert total > 0, "no test ran inside the guest"
        assert not bad, f"{len(bad)} of {total} failed inside the guest: {bad}"


def _boot(release: str, job: jobs.Job, tmp_path: Path, timeout: float) -> boot.Boot:
    img = image.image(image.RELEASES[release])
    carried = {}  # under /job -> the directory here
    if job.programs:  # built from this checkout, into a directory of the test's own
        carried["guest-build"] = tmp_path / "guest-build"
        build_guest_programs(image.ROOT / "guest", carried["guest-build"])
    if job.task:  # the task workload's project, for the guest's Python
        project = task_source.fetch(Paths.from_env().cache, img.release.python)
        carried[f"task/{project.name}"] = project
    result = boot.boot(img, job.script(), tmp_path / "guest", timeout, carried)
    booted = "never" if result.boot_s is None else f"{result.boot_s:.0f} s"
    print(
        f"\n{img.built()}\nbooted under {result.accel} to its job in {booted}; the job "
        f"took {result.total_s:.0f} s in all"
    )
    return result


@pytest.mark.timeout(JOB_TIMEOUT_S["short"] + 1800)
def test_debian_12_with_systemd_and_cgroup_v2_short(tmp_path):
    """Debian 12 as installed: the set-up, doctor, a quickstart and a run killed amid its
    pile-up inside, nothing left after `clean`, the user's dockerd untouched."""
    _check(_boot("bookworm", jobs.SHORT, tmp_path, JOB_TIMEOUT_S["short"]), jobs.SHORT)


@pytest.mark.hosts
@pytest.mark.timeout(JOB_TIMEOUT_S["full"] + 1800)
@pytest.mark.parametrize("release", ["bookworm", "trixie"])
def test_guest_host_full(release, tmp_path):
    """`make demo` and the runtimes', engines' and fault tests on Debian 12 and 13
    (`make test-hosts`)."""
    job = jobs.FULL[release]
    _check(_boot(release, job, tmp_path, JOB_TIMEOUT_S["full"]), job)
