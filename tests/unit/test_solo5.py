"""Solo5's tenders as runtimes: the command line each instance's tender gets from the
unikernel's manifest (read by a stand-in for solo5-elftool that says what a real one
would), what they refuse, and how they say their version and where to get them (the real
tenders and unikernels: tests/integration/test_real_images.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from virtbench import runtimes
from virtbench.errors import InstanceError
from virtbench.runtimes.base import Instance, InstanceSpec


def elftool(tmp_path: Path, devices: list[dict[str, str]]) -> str:
    """A solo5-elftool that answers `query-manifest` with `devices`, as the real one does."""
    manifest = {"type": "solo5.manifest", "version": 1, "devices": devices}
    tool = tmp_path / "solo5-elftool"
    tool.write_text(
        f"#!/bin/sh\n[ \"$1\" = query-manifest ] || exit 2\ncat <<'E'\n{json.dumps(manifest)}\nE\n"
    )
    tool.chmod(0o755)
    return str(tool)


def tender(tmp_path: Path, name: str, devices: list[dict[str, str]], **opts: object):
    kernel = tmp_path / "test_ping.hvt"
    kernel.write_bytes(b"\x7fELF")
    cls = runtimes.get(name)
    ctx = SimpleNamespace(paths=SimpleNamespace(cache=tmp_path), scratch=tmp_path, probe=None)
    options = cls.Options(kernel=kernel, elftool=elftool(tmp_path, devices), **opts)
    return cls(ctx, options)  # type: ignore[arg-type]


def instance(rt, tmp_path: Path, tap: str | None) -> Instance:
    spec_ = InstanceSpec("vb-r1-0001", ("/bin/vb-sleep", "{probe}", "vb-r1-0001"), tmp_path)
    inst = Instance(spec_, rt.label, tmp_path / "c.log", argv=spec_.argv, own=rt.State())
    if tap is not None:
        inst.address, inst.own.tap, inst.own.mac = "10.1.0.2", tap, "06:00:0a:01:00:02"
        inst.own.prefixlen, inst.own.gateway = 16, "10.1.0.1"
    return inst


NET = [{"name": "service0", "type": "NET_BASIC"}]


@pytest.mark.parametrize("name", ["solo5-hvt", "solo5-spt"])
def test_the_tender_gets_memory_its_manifests_network_device_and_the_preset(tmp_path, name):
    rt = tender(tmp_path, name, NET, preset="solo5", cmdline="verbose", memory_mib=16)
    assert rt.effective_network("none") == "bridge"  # its manifest's device needs a tap
    argv = rt._command(instance(rt, tmp_path, "vb-r1-0001t"))
    assert argv[1:] == [
        "--mem=16",
        "--net:service0=vb-r1-0001t",
        "--net-mac:service0=06:00:0a:01:00:02",
        str(rt.options.kernel),
        "--ipv4=10.1.0.2/16",
        "--ipv4-gateway=10.1.0.1",
        "verbose",
    ]
    assert os.path.basename(argv[0]) == name


def test_a_unikernel_without_devices_runs_on_no_network(tmp_path):
    rt = tender(tmp_path, "solo5-hvt", [], cmdline="Hello_Solo5")
    assert rt.effective_network("bridge") == "none"
    argv = rt._command(instance(rt, tmp_path, None))
    assert argv[1:] == ["--mem=64", str(rt.options.kernel), "Hello_Solo5"]


def test_devices_it_cannot_attach_are_refused_naming_them(tmp_path):
    block = [*NET, {"name": "storage", "type": "BLOCK_BASIC"}]
    rt = tender(tmp_path, "solo5-spt", block)
    with pytest.raises(InstanceError, match=r"storage \(BLOCK_BASIC\)"):
        rt._command(instance(rt, tmp_path, "vb-r1-0001t"))
    rt = tender(tmp_path, "solo5-spt", NET)
    (tmp_path / "solo5-elftool").write_text("#!/bin/sh\necho 'not a Solo5 binary' >&2\nexit 1\n")
    with pytest.raises(InstanceError, match=r"cannot read the manifest.*not a Solo5 binary"):
        rt._command(instance(rt, tmp_path, "vb-r1-0001t"))


def test_options_a_tender_does_not_take_are_one_line_errors(tmp_path):
    kernel = tmp_path / "k.hvt"
    kernel.write_bytes(b"\x7fELF")
    cls = runtimes.get("solo5-hvt")
    with pytest.raises(ValidationError, match="takes no initrd"):
        cls.Options(kernel=kernel, initrd=kernel)
    with pytest.raises(ValidationError, match="block devices are not supported"):
        cls.Options(kernel=kernel, disk=kernel)
    with pytest.raises(ValidationError, match="guest"):
        cls.Options(kernel=kernel, guest="minimal")
    # without a unikernel the options still load (doctor asks about the tender alone),
    # and the driver refuses to run anything, saying what to give
    assert "unikernel.hvt" in (cls.cannot_run("hello", cls.Options()) or "")
    assert cls.cannot_run("hello", cls.Options(kernel=kernel)) is None


def test_version_is_read_from_stderr_and_a_missing_tender_says_how_to_build_it(tmp_path):
    fake = tmp_path / "solo5-hvt"
    fake.write_text(
        "#!/bin/sh\necho 'solo5-hvt tender, version v0.12.1' >&2\necho 'ABI version 2' >&2\n"
    )
    fake.chmod(0o755)
    cls = runtimes.get("solo5-hvt")
    assert cls.version_of(str(fake)) == "0.12.1"
    kernel = tmp_path / "k.hvt"
    kernel.write_bytes(b"\x7fELF")
    spt = runtimes.get("solo5-spt")
    missing = spt.available(spt.Options(kernel=kernel, binary=str(tmp_path / "none")))
    assert not missing.ok and "not on PATH" in missing.reason
    assert "github.com/Solo5/solo5" in missing.fix and "solo5-spt" in missing.fix
    assert not spt.needs_kvm(None) and cls.needs_kvm(None)
