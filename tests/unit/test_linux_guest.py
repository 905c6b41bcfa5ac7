"""Linux guests' initramfs: the newc cpio virtbench writes, read back by GNU cpio; module
load order from modinfo dependencies; the kernel command line vb-init reads."""

from __future__ import annotations

import re
import stat
import subprocess

from virtbench.artifacts.linux import module_order, tree_entries, write_cpio


def test_cpio_is_read_back_by_gnu_cpio_with_device_node_and_symlink(tmp_path):
    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "prog").write_bytes(b"\x7fELF" + bytes(range(256)) * 3)  # odd sizes pad
    (root / "bin" / "prog").chmod(0o755)
    (root / "etc").mkdir()
    (root / "etc" / "x").write_text("abc")
    (root / "bin" / "link").symlink_to("prog")
    entries = tree_entries(root)
    entries.append(("dev", stat.S_IFDIR | 0o755, b"", (0, 0)))
    entries.append(("dev/console", stat.S_IFCHR | 0o600, b"", (5, 1)))
    archive = tmp_path / "a.cpio"
    write_cpio(archive, entries)
    listing = subprocess.run(["cpio", "-itv", "--quiet"], input=archive.read_bytes(),
                             capture_output=True, check=True).stdout.decode()  # fmt: skip
    lines = {line.split()[-1] if "->" not in line else line.split()[-3]: line
             for line in listing.splitlines()}  # fmt: skip
    assert set(lines) == {"bin", "bin/prog", "bin/link", "etc", "etc/x", "dev", "dev/console"}
    assert lines["dev/console"].startswith("crw-------")
    assert re.search(r" 5, +1 ", lines["dev/console"])
    assert lines["bin/prog"].startswith("-rwxr-xr-x") and "-> prog" in lines["bin/link"]
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet", "--no-absolute-filenames", "--nonmatching",
                    "dev/console"], input=archive.read_bytes(), cwd=out, check=True)  # fmt: skip
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
