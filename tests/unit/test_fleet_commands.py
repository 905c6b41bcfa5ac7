"""The fleet's own commands on the controller (git ls-files for the source tarball,
ansible-inventory for the hosts), run through host/proc.py."""

from __future__ import annotations

import sys
import tarfile
from pathlib import Path

import pytest

from virtbench import fleet
from virtbench.errors import VirtbenchError
from virtbench.fleet.play import inventory_hosts
from virtbench.host import proc


def test_the_source_tarball_holds_the_files_git_knows_of(tmp_path):
    root = tmp_path / "src"
    proc.run(["git", "init", "-q", str(root)])
    for name, text in {
        "Makefile": "all:\n",
        "é.txt": "x",  # a name git writes as UTF-8 bytes
        ".gitignore": "ignored\n",
        "ignored": "no",
    }.items():
        (root / name).write_text(text)
    dest = tmp_path / "out"
    dest.mkdir()
    path, digest = fleet.source_tarball(dest, root)
    with tarfile.open(path) as tar:
        assert sorted(tar.getnames()) == [".gitignore", "Makefile", "é.txt"]
    assert len(digest) == 16 and fleet.source_tarball(dest, root)[1] == digest
    (root / ".git").rename(root / "git")  # git refuses a checkout that is not one
    (root / ".git").write_text("gitdir: /nonexistent\n")
    with pytest.raises(VirtbenchError, match=r"fleet: git ls-files in .* failed: "):
        fleet.source_tarball(dest, root)


@pytest.mark.skipif(
    not (Path(sys.executable).parent / "ansible-inventory").exists(),
    reason="ansible-inventory is not installed next to this Python",
)
def test_the_inventory_is_read_by_ansible_itself(tmp_path):
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[bench]\na ansible_host=10.0.0.1 virtbench_dir=/opt/x\nb\n")
    hosts = inventory_hosts(inventory, tmp_path / "work")
    assert list(hosts) == ["a", "b"] and hosts["a"]["virtbench_dir"] == "/opt/x"
    assert hosts["a"]["group_names"] == ["bench"]
    inventory.write_text("[bench]\na\n[loadgen]\nlg ansible_host=10.0.0.9 ansible_user=root\n")
    hosts = inventory_hosts(inventory, tmp_path / "work")
    assert hosts["lg"]["group_names"] == ["loadgen"] and hosts["a"]["group_names"] == ["bench"]
    inventory.write_text("[bench]\n")
    with pytest.raises(VirtbenchError, match="no hosts in it"):
        inventory_hosts(inventory, tmp_path / "work")


def test_roles_give_each_host_under_test_its_own_load_generator():
    from virtbench.fleet.roles import loadgen_args, roles

    lg = {"group_names": ["loadgen"], "ansible_host": "10.0.0.9", "ansible_user": "root"}
    opts = {"virtbench_loadgen_ssh_options": ["IdentityFile=/k"]}
    hosts = {"a": {"group_names": ["bench"], **opts}, "lg": lg}
    cast = roles(hosts)
    assert cast.loadgens == ["lg"] and cast.loadgen_of == {"a": "lg"}
    assert cast.under_test(["a", "lg"]) == ["a"]
    assert loadgen_args("a", hosts, cast.loadgen_of) == [
        "--loadgen",
        "root@10.0.0.9",
        "--ssh-option=IdentityFile=/k",
    ]
    ini = {"virtbench_loadgen_ssh_options": "[IdentityFile=/k,Port=2]"}  # an INI value
    assert loadgen_args("a", {**hosts, "a": ini}, cast.loadgen_of)[2:] == [
        "--ssh-option=IdentityFile=/k",
        "--ssh-option=Port=2",
    ]
    assert roles({"a": {}, "b": {}}).loadgens == []  # no roles: every host as before
    with pytest.raises(VirtbenchError, match="a, b would share the load generator lg"):
        roles({"a": {}, "b": {}, "lg": lg})
    with pytest.raises(VirtbenchError, match="a has no virtbench_loadgen"):
        roles({"a": {}, "lg": lg, "lg2": {"virtbench_role": "loadgen"}})
    with pytest.raises(VirtbenchError, match="virtbench_loadgen b is not a load generator"):
        roles({"a": {"virtbench_loadgen": "b"}, "b": {}, "lg": lg})
    two = roles({"a": {"virtbench_loadgen": "lg2"}, "lg": lg, "lg2": {"virtbench_role": "loadgen"}})
    assert two.loadgen_of == {"a": "lg2"}


def test_the_offline_hosts_wheels_are_kept_by_the_lock_file_and_sent_again_as_they_are(
    tmp_path, monkeypatch
):
    """A second fleet run sends the wheelhouse the first one gathered, without pip; a
    changed requirements.lock gathers it anew."""
    import subprocess

    downloads = []

    def pip(argv, **kwargs):
        downloads.append(argv)
        into = Path(argv[argv.index("-d") + 1])
        into.mkdir(parents=True)
        (into / f"a-{len(downloads)}.0-py3-none-any.whl").write_text("a wheel")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(fleet.proc, "run", pip)
    root, cache = tmp_path / "src", tmp_path / "cache"
    root.mkdir()
    (root / "requirements.lock").write_text("a==1.0\n")
    first, digest = fleet.wheelhouse(tmp_path / "w1", root, cache=cache)
    again, same = fleet.wheelhouse(tmp_path / "w2", root, cache=cache)
    assert len(downloads) == 1 and same == digest
    assert again.parent == cache / "wheelhouse" and again.read_bytes() == first.read_bytes()
    (root / "requirements.lock").write_text("a==2.0\n")
    _, other = fleet.wheelhouse(tmp_path / "w3", root, cache=cache)
    assert len(downloads) == 2 and other != digest
    (root / "requirements.lock").write_text("a==3.0\n")
    fleet.wheelhouse(tmp_path / "w4", root, cache=cache)
    assert len(list((cache / "wheelhouse").glob("*.tar"))) == 2  # the two newest kept
