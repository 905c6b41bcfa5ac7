"""The VM drivers' options and labels, which workloads their guests run, and the kernel
and command line each VMM gets for a Linux guest."""

import re
from types import SimpleNamespace

import pytest
from pydantic import ValidationError
from tests.unit.test_linux_guest import fake_bzimage

from virtbench import runtimes
from virtbench.runtimes.base import Instance, InstanceSpec
from virtbench.runtimes.vm import image as vm_image
from virtbench.runtimes.vm.base import guest_mode
from virtbench.runtimes.vm.qemu import QemuOptions


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
    assert guest_mode(("/bin/vb-sleep", "{probe}", "vb-x-1")) == "sleep"
    assert guest_mode(("/bin/vb-ready", "{probe}", "vb-x-1", "/bin/vb-sleep")) is None
    assert guest_mode(("/bin/vb-ready", "{probe}", "vb-x-1", "--beat", "2")) == "beat"
    assert guest_mode(("/usr/sbin/nginx",)) is None
    cls = runtimes.get("qemu")
    assert all(cls.cannot_run(w) is None for w in ("hello", "sleep", "beat"))
    minimal = cls.Options(guest="minimal")
    assert "hello, sleep and beat" in (cls.cannot_run("nginx", minimal) or "")
    tcg = cls.Options(variant="q35:tcg", guest="linux")
    assert cls.cannot_run("nginx", tcg) is None  # Linux under emulation boots anywhere
    assert cls.cannot_run("fio", tcg) is None  # a data disk: an ext4 image per instance


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


@pytest.mark.parametrize(
    ("name", "exit_mode", "elf"),
    [
        ("qemu", "vb.exit=isa", False),  # QEMU loads a bzImage and has isa-debug-exit
        ("firecracker", "vb.exit=reboot", True),  # no power-off: the i8042 reset (reboot=k)
        ("cloud-hypervisor", "vb.exit=poweroff", True),  # ACPI power-off
    ],
)
def test_linux_guest_kernel_and_command_line_per_vmm(tmp_path, name, exit_mode, elf):
    image = fake_bzimage(tmp_path / "vmlinuz", b"\x7fELF" + b"k" * 4000, ["gzip", "-c"])
    cls = runtimes.get(name)
    ctx = SimpleNamespace(paths=SimpleNamespace(cache=tmp_path / "cache"))
    rt = cls(ctx, cls.Options(guest="linux", kernel=image))  # type: ignore[arg-type]
    spec = InstanceSpec("vb-r1-nginx-1", ("/usr/sbin/nginx", "-g", "x y"), tmp_path)
    inst = Instance(spec, name, tmp_path / "log", argv=spec.argv, own=rt.State())
    line = rt.boot.cmdline(inst)
    assert exit_mode in line.split() and "vb.name=vb-r1-nginx-1" in line.split()
    argv = bytes.fromhex(re.search(r"vb\.argv=(\w+)", line).group(1)).split(b"\0")
    assert argv == [b"/usr/sbin/nginx", b"-g", b"x y", b""]
    assert ("reboot=k" in line.split()) == (name == "firecracker")
    kernel = rt.boot.kernel(inst)
    assert (kernel != image) == elf
    assert kernel.read_bytes() == (b"\x7fELF" + b"k" * 4000 if elf else image.read_bytes())


def test_qemu_disk_path_with_commas_stays_one_option_value(tmp_path):
    """An image's disk is each instance's own copy-on-write layer over it; a layer at
    `a,b` must not add `b` as a -drive option (QEMU: a doubled comma)."""
    kernel = tmp_path / "k.elf"
    kernel.write_bytes(b"\x7fELF")
    disk = tmp_path / "disk,format=qcow2,if=ide.img"
    disk.write_bytes(b"\0" * 512)
    scratch = tmp_path / "state,format=raw"
    scratch.mkdir()
    cls = runtimes.get("qemu")
    ctx = SimpleNamespace(paths=SimpleNamespace(cache=tmp_path / "cache"), scratch=scratch)
    opts = cls.Options(guest="image", kernel=kernel, disk=disk, ready="up")
    rt = cls(ctx, opts)  # type: ignore[arg-type]
    spec = InstanceSpec("vb-r1-1", ("/bin/vb-hello",), tmp_path)
    inst = Instance(spec, "qemu", tmp_path / "log", argv=spec.argv, own=rt.State())
    vm_image.disk_layer(inst, opts, scratch)
    layer = inst.own.disk_layer
    argv = rt._command(inst)
    drive = argv[argv.index("-drive") + 1]
    assert drive == f"id=vbdisk,file={str(layer).replace(',', ',,')},if=none,format=qcow2"
    # read back the way QEMU splits it: on single commas only
    fields = re.split(r"(?<!,),(?!,)", drive)
    assert [f.replace(",,", ",") for f in fields][1] == f"file={layer}"
    vm_image.end(inst)
    assert not layer.exists() and disk.read_bytes() == b"\0" * 512
