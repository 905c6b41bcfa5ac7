"""The qemu driver's options and labels, and which workloads its minimal guest runs."""

import pytest
from pydantic import ValidationError

from virtbench import runtimes
from virtbench.runtimes.qemu import QemuOptions
from virtbench.runtimes.vm import guest_mode


def options(label: str) -> QemuOptions:
    return runtimes.get(label).Options(**runtimes.options_for(label, {}))


def test_labels_pick_machine_and_accel():
    assert (options("qemu").machine, options("qemu").accel) == ("microvm", "kvm")
    assert (options("qemu:q35").machine, options("qemu:q35").accel) == ("q35", "kvm")
    tcg = options("qemu:q35:tcg")
    assert (tcg.machine, tcg.accel) == ("q35", "tcg")
    with pytest.raises(ValueError, match="unknown variant 'qemu:pc'"):
        runtimes.check_label("qemu:pc")
    with pytest.raises(ValidationError, match="machine"):
        QemuOptions(variant="q35:hvf")


def test_minimal_guest_modes_and_refusals():
    assert guest_mode(("/bin/vb-hello",)) == "hello"
    assert guest_mode(("/bin/vb-ready", "{probe}", "vb-x-1", "/bin/vb-sleep")) == "sleep"
    assert guest_mode(("/usr/sbin/nginx",)) is None
    cls = runtimes.get("qemu")
    assert cls.cannot_run("hello") is None and cls.cannot_run("sleep") is None
    minimal = cls.Options(guest="minimal")
    assert "hello and sleep" in (cls.cannot_run("nginx", minimal) or "")
    tcg = cls.Options(variant="q35:tcg", guest="linux")
    assert cls.cannot_run("nginx", tcg) is None  # Linux under emulation boots anywhere
    assert "data disk" in (cls.cannot_run("fio", tcg) or "")


def test_bring_your_own_image_options(tmp_path):
    kernel = tmp_path / "unikernel.elf"
    kernel.write_bytes(b"\x7fELF")
    cls = runtimes.get("qemu")
    opts = cls.Options(guest="image", kernel=kernel, cmdline="name={name}", ready="booted")
    assert opts.kernel == kernel and opts.ready == "booted"
    with pytest.raises(ValidationError, match='needs kernel = "/path/to/kernel"'):
        cls.Options(guest="image")
    with pytest.raises(ValidationError, match="no such file"):
        cls.Options(guest="image", kernel=tmp_path / "missing")
    with pytest.raises(ValidationError, match="not a regular expression"):
        cls.Options(guest="image", kernel=kernel, ready="(unclosed")
    with pytest.raises(ValidationError, match='need guest = "image"'):
        cls.Options(kernel=kernel)  # a kernel without saying it is an image
    for name in ("firecracker", "cloud-hypervisor"):
        other = runtimes.get(name).Options(guest="image", kernel=kernel, initrd=kernel)
        assert other.initrd == kernel


def test_vmm_drivers_say_where_to_get_missing_binaries():
    for name in ("firecracker", "cloud-hypervisor"):
        cls = runtimes.get(name)
        avail = cls.available(cls.Options(binary="vb-no-such-vmm"))
        assert not avail.ok and avail.reason == "vb-no-such-vmm not on PATH"
        assert "github.com" in (avail.fix or "") and "PATH" in (avail.fix or "")
        assert cls.cannot_run("hello") is None
        assert cls.cannot_run("nginx", cls.Options(guest="minimal"))
