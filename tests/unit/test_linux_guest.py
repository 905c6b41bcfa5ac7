"""Linux guests' initramfs: the newc cpio virtbench writes, read back by GNU cpio; module
load order from modinfo dependencies; the kernel command line vb-init reads."""

from __future__ import annotations

import os
import re
import stat
import struct
import subprocess

import pytest

from virtbench.artifacts.linux import Entry, elf_kernel, module_order, tree_entries, write_cpio
from virtbench.errors import VirtbenchError


def test_cpio_is_read_back_by_gnu_cpio_with_device_node_and_symlink(tmp_path):
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "prog").write_bytes(b"\x7fELF" + bytes(range(256)) * 3)  # odd sizes pad
    (root / "bin" / "prog").chmod(0o755)
    (root / "etc").mkdir()
    (root / "etc" / "x").write_text("abc")
    os.utime(root / "etc" / "x", (1577880000, 1577880000))  # 2020-01-01: kept (a .pyc's source)
    (root / "bin" / "link").symlink_to("prog")
    entries = tree_entries(root)
    entries.append(Entry("dev", stat.S_IFDIR | 0o755))
    entries.append(Entry("dev/console", stat.S_IFCHR | 0o600, rdev=(5, 1)))
    archive = tmp_path / "a.cpio"
    write_cpio(archive, entries)
    listing = subprocess.run(
        ["cpio", "-itv", "--quiet"], input=archive.read_bytes(), capture_output=True, check=True
    ).stdout.decode()
    lines = {
        line.split()[-1] if "->" not in line else line.split()[-3]: line
        for line in listing.splitlines()
    }
    assert set(lines) == {"bin", "bin/prog", "bin/link", "etc", "etc/x", "dev", "dev/console"}
    assert lines["dev/console"].startswith("crw-------")
    assert re.search(r" 5, +1 ", lines["dev/console"])
    assert lines["bin/prog"].startswith("-rwxr-xr-x") and "-> prog" in lines["bin/link"]
    assert " 2020 " in lines["etc/x"] or "Jan  1  2020" in lines["etc/x"], lines["etc/x"]
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(
        ["cpio", "-id", "--quiet", "--no-absolute-filenames", "--nonmatching", "dev/console"],
        input=archive.read_bytes(),
        cwd=out,
        check=True,
    )
    assert (out / "bin" / "prog").read_bytes() == (root / "bin" / "prog").read_bytes()
    assert (out / "etc" / "x").read_text() == "abc"


def test_module_order_puts_dependencies_first(tmp_path):
    def ko(name: str, depends: str) -> None:
        info = b"\x7fELF\x00license=GPL\x00depends=" + depends.encode() + b"\x00vermagic=6\x00"
        (tmp_path / f"{name}.ko").write_bytes(info)

    ko("virtio_net", "virtio_ring,virtio,net_failover")
    ko("net_failover", "failover")
    ko("failover", "")
    ko("virtio", "")
    ko("virtio_ring", "")
    order = [p.stem for p in module_order(tmp_path, ("virtio_net", "builtin_one"))]
    assert order.index("failover") < order.index("net_failover") < order.index("virtio_net")
    assert set(order) == {"virtio_net", "net_failover", "failover", "virtio", "virtio_ring"}


def fake_bzimage(path, kernel: bytes, compress: list[str], size: int | None = None):
    """A bzImage as the boot protocol lays it out: setup sectors with the setup header
    (HdrS, setup_sects, payload_offset/length), then the compressed kernel + its size."""
    packed = subprocess.run(compress, input=kernel, capture_output=True, check=True).stdout
    payload = packed + struct.pack("<I", len(kernel) if size is None else size)
    setup = bytearray(5 * 512)  # setup_sects = 4
    setup[0x1F1] = 4
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<II", setup, 0x248, 64, len(payload))  # payload after 64 bytes of code
    path.write_bytes(bytes(setup) + b"\x90" * 64 + payload + b"\x00" * 100)
    return path


@pytest.mark.parametrize(
    "compress",
    [
        ["gzip", "-9c"],
        ["xz", "-c", "--check=crc32"],
        ["lz4", "-lc"],
        ["zstd", "-c"],
        ["bzip2", "-c"],
    ],
    ids=["gzip", "xz", "lz4-legacy", "zstd", "bzip2"],
)
def test_bzimage_is_unpacked_to_its_elf_kernel_once(tmp_path, compress):
    kernel = b"\x7fELF" + bytes(range(256)) * 5000  # 1.3 MB
    image = fake_bzimage(tmp_path / "vmlinuz-test", kernel, compress)
    out = elf_kernel(image, tmp_path / "elf")
    assert out.read_bytes() == kernel
    assert elf_kernel(image, tmp_path / "elf") == out  # cached
    assert sorted(p.name for p in (tmp_path / "elf").iterdir()) == [out.name]  # no leftovers


def test_elf_kernel_is_used_as_it_is_and_bad_kernels_are_named(tmp_path):
    elf = tmp_path / "vmlinux"
    elf.write_bytes(b"\x7fELF" + b"\x00" * 1000)
    assert elf_kernel(elf, tmp_path / "elf") == elf
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x00" * 2000)
    with pytest.raises(VirtbenchError, match="junk: neither an ELF kernel nor a bzImage"):
        elf_kernel(junk, tmp_path / "elf")
    short = fake_bzimage(tmp_path / "short", b"\x7fELF" * 100, ["gzip", "-c"], size=9999)
    with pytest.raises(VirtbenchError, match="short: gzip could not unpack the kernel: 400 by"):
        elf_kernel(short, tmp_path / "elf")
    odd = fake_bzimage(tmp_path / "odd", b"\x7fELF" * 100, ["cat"])
    with pytest.raises(VirtbenchError, match="odd: unknown compression of the kernel payload"):
        elf_kernel(odd, tmp_path / "elf")
    assert not (tmp_path / "elf").exists() or not any((tmp_path / "elf").iterdir())
