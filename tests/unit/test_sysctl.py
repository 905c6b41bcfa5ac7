"""The sysctl profile (host/sysctl.py) against a /proc/sys the test writes: applied, put back,
a crashed run's values found and put back by clean, and a value changed since left alone."""

from __future__ import annotations

import json

import pytest

from virtbench import spec as specmod
from virtbench.errors import SpecError, VirtbenchError
from virtbench.host import sysctl


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "proc-sys"
    for key, value in (
        ("net.core.somaxconn", "4096"),
        ("net.ipv4.ip_local_port_range", "32768\t60999"),
        ("net.ipv4.tcp_tw_reuse", "2"),
    ):
        sysctl.path_of(key, r).parent.mkdir(parents=True, exist_ok=True)
        sysctl.path_of(key, r).write_text(value + "\n")
    return r


S3 = {
    "net.core.somaxconn": "1024",
    "net.ipv4.ip_local_port_range": "1024 65535",
    "net.ipv4.tcp_tw_reuse": "1",
}


def test_apply_then_restore_puts_every_key_back(root, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    prof = sysctl.HostProfile(S3, state, root)
    got = prof.apply()
    assert got["net.ipv4.ip_local_port_range"] == {
        "before": "32768 60999",
        "set": "1024 65535",
        "kept": "1024 65535",
    }
    assert sysctl.read("net.core.somaxconn", root) == "1024"
    saved = json.loads((state / sysctl.FILE).read_text())  # on disk before any change
    assert saved["net.core.somaxconn"] == ["4096", "1024"]
    assert prof.restore() == []
    assert sysctl.read("net.core.somaxconn", root) == "4096"
    assert sysctl.read("net.ipv4.ip_local_port_range", root) == "32768 60999"
    assert not (state / sysctl.FILE).exists()


def test_a_crashed_runs_values_are_restored_unless_changed_since(root, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    sysctl.HostProfile(S3, state, root).apply()  # then the run dies
    sysctl.write("net.ipv4.tcp_tw_reuse", "0", root)  # someone changed one since
    why = sysctl.restore_one("net.ipv4.tcp_tw_reuse", "2", "1", root)
    assert why and "left as it is" in why and sysctl.read("net.ipv4.tcp_tw_reuse", root) == "0"
    assert sysctl.restore_one("net.core.somaxconn", "4096", "1024", root) is None
    assert sysctl.read("net.core.somaxconn", root) == "4096"
    assert sysctl.restore_file(state / sysctl.FILE, root) == [
        "sysctl net.core.somaxconn is '4096', not the run's '1024': left as it is",
        "sysctl net.ipv4.tcp_tw_reuse is '0', not the run's '1': left as it is",
    ]
    assert sysctl.read("net.ipv4.ip_local_port_range", root) == "32768 60999"


def test_what_the_kernel_kept_is_what_is_put_back_and_a_changed_key_is_said(root, tmp_path):
    """The kernel may store a value its own way (010 -> 10): that is what the run set, so
    clean still puts the key back; a key changed since by someone else is said, not
    silently skipped; an unreadable record is said too."""
    state = tmp_path / "state"
    state.mkdir()
    got = sysctl.HostProfile({"net.core.somaxconn": "010"}, state, root).apply()
    # (a file under /proc/sys would keep 10; this one keeps what it was given)
    assert got["net.core.somaxconn"]["kept"] == "010"
    assert json.loads((state / sysctl.FILE).read_text())["net.core.somaxconn"] == ["4096", "010"]
    problems: list[str] = []
    assert sysctl.leftovers(state, problems, root) == [("net.core.somaxconn", "4096", "010")]
    sysctl.write("net.core.somaxconn", "77", root)  # someone else's change
    assert sysctl.leftovers(state, problems, root) == []
    assert problems == [
        "run state: sysctl net.core.somaxconn is '77', neither its '4096' nor "
        "the run's '010': left as it is"
    ]
    (state / sysctl.FILE).write_text("{not json")
    problems = []
    assert sysctl.leftovers(state, problems, root) == []
    assert problems and "cannot be read" in problems[0]


def test_an_unknown_key_fails_before_anything_is_changed(root, tmp_path):
    prof = sysctl.HostProfile({**S3, "net.core.nosuch": "1"}, tmp_path, root)
    with pytest.raises(VirtbenchError, match=r"sysctl.net.core.nosuch: no such key"):
        prof.apply()
    assert sysctl.read("net.core.somaxconn", root) == "4096"
    assert prof.restore() == []


def test_the_profile_as_namespaced_keys_and_a_kernel_command_line():
    prof = {**S3, "fs.file-max": "20000", "kernel.shmmax": "1"}
    assert set(sysctl.namespaced(prof)) == {*S3, "kernel.shmmax"}
    line = sysctl.cmdline(prof)
    assert 'sysctl.net.ipv4.ip_local_port_range="1024 65535"' in line
    assert "sysctl.fs.file-max=20000" in line


def test_the_spec_takes_a_profile_and_names_a_bad_key():
    base = {"name": "x", "runtimes": ["crun"], "experiment": [{"type": "boot"}]}
    got = specmod.parse(
        {
            **base,
            "sysctl": {"net.core.somaxconn": 1024, "net.ipv4.ip_local_port_range": "1024  65535"},
        },
        "x.toml",
    )
    assert got.sysctl == {
        "net.core.somaxconn": "1024",
        "net.ipv4.ip_local_port_range": "1024 65535",
    }
    with pytest.raises(SpecError, match=r"x.toml: sysctl\.\.\./etc: is not a sysctl key"):
        specmod.parse({**base, "sysctl": {"../etc": 1}}, "x.toml")
    with pytest.raises(SpecError, match=r"give a number or a string"):
        specmod.parse({**base, "sysctl": {"net.core.somaxconn": True}}, "x.toml")


def test_s3_applies_the_studys_tuning():
    spec, _, _ = specmod.load("s3-lightweight-survey")
    assert spec.sysctl["net.core.somaxconn"] == "1024"
    assert spec.sysctl["net.ipv4.ip_local_port_range"] == "1024 65535"
