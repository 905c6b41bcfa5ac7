"""The conditions each runtime's figures were taken under, as its samples record them,
shown beside them, and a warning when two compared runtimes differ in them."""

from __future__ import annotations

import dataclasses

from virtbench.report import conditions
from virtbench.store.records import Sample


def smp(runtime: str, **params: str) -> Sample:
    return Sample(
        experiment="boot",
        metric="boot.spawn_to_ready",
        value=10.0,
        unit="ms",
        direction="lower",
        runtime=runtime,
        workload="sleep",
        repetition=0,
        params={"network": "none", **params},
    )


CRUN = {
    "rootfs": "overlay (artifact lower, upper on disk)",
    "security": "engine-default",
    "seccomp": "/usr/share/containers/seccomp.json sha256:cc37",
    "lsm": "none",
}
PLAIN = {
    "rootfs": "dir (the artifact, read-only, shared)",
    "security": "minimal",
    "seccomp": "none",
}
DOCKER = {
    "rootfs": "overlay (docker's overlay2 storage driver)",
    "security": "engine-default (docker's own seccomp profile)",
}


def test_each_runtime_shows_its_conditions_and_differences_are_warned_of():
    samples = [
        smp("crun", **CRUN),
        smp("crun", **CRUN),
        smp("crun-plain", **PLAIN),
        smp("docker", **DOCKER),
        smp("native"),
    ]
    got = conditions.shown(samples)
    lines = [t for level, t in got if level == "conditions"]
    assert lines[0].startswith(
        "crun: rootfs overlay (artifact lower, upper on disk), security "
        "engine-default (seccomp /usr/share/containers/seccomp.json"
    )
    assert lines[1] == (
        "crun-plain: rootfs dir (the artifact, read-only, shared), security minimal (seccomp none)"
    )
    assert len(lines) == 3  # native records none
    warned = [t for level, t in got if level == "warning"]
    # crun and docker: both an overlay per container, both the engines' default
    assert len(warned) == 2 and all("crun-plain" in w for w in warned), warned
    assert "rootfs: overlay vs dir; security: engine-default vs minimal" in warned[0]


def test_a_runtime_without_recorded_conditions_is_not_warned_of():
    assert conditions.warning("native", {}, "crun", CRUN) is None
    assert conditions.differences({"firmware": "qboot"}, {"firmware": "seabios"}) == ["firmware"]


def test_the_report_shows_each_runtimes_conditions_and_warns_of_differences(tmp_path):
    from typer.testing import CliRunner

    from virtbench.cli import app
    from virtbench.store import Store

    store = Store(tmp_path)
    store.create_run("ccccc9", "conds", ["virtbench", "run", "conds.toml"], {"name": "conds"})
    for runtime, params in (("crun", CRUN), ("crun-plain", PLAIN)):
        for rep in range(3):
            store.add_sample("ccccc9", dataclasses.replace(smp(runtime, **params), repetition=rep))
    store.finish_run("ccccc9", "completed")
    out = tmp_path / "r.html"
    res = CliRunner().invoke(app, ["report", "ccccc9", "-o", str(out), "--results", str(tmp_path)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    # each runtime's conditions once, in the run's facts
    assert page.count("<li>crun-plain: rootfs dir (the artifact, read-only") == 1, page
    assert page.count("<li>crun: rootfs overlay (artifact lower") == 1
    # the difference, among what to weigh before the results
    warned = "crun and crun-plain ran under different conditions (rootfs: overlay "
    assert page.index(warned) < page.index("Appendix"), "said before the facts"
    assert page.index("Before you trust") < page.index('<h3 id="run-ccccc9-boot">')


def test_where_a_client_ran_is_a_condition_of_its_figures():
    """A client on the host under test says so; one on a load generator names it and how
    it reached the instance."""
    local = conditions.shown([smp("crun", **CRUN, client_cpus="1")])
    assert local[0][1].endswith(", client on the host under test (CPUs 1)"), local
    remote = {"client_host": "root@lg1", "client_path": "routed bridge", "client_cpus": "1"}
    got = conditions.shown([smp("native", **remote)])
    assert got == [("conditions", "native: client on the load generator root@lg1 (routed bridge)")]
