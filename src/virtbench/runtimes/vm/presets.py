"""How images built elsewhere learn their address and where they print: one preset per
kind of guest, so that a spec says `preset = "unikraft"` instead of a command line.

An image on the run's bridge gets a tap and an address from virtbench; it must be told
that address, its gateway (the host's end of the bridge) and its netmask, and each kind
of unikernel reads them from the kernel command line in its own syntax. A preset is that
syntax as a template of `{ip}`, `{prefixlen}`, `{netmask}`, `{gateway}`, `{name}` (the
instance name) and `{port}` (the port it serves), put before the spec's own `cmdline`
(which carries the application's arguments). Without a network (hello and sleep on no
bridge) only the preset's console part is used. A guest that reads its whole configuration
as one document (Rumprun's JSON) has a `compose` step instead, which makes the document
of the same fields and the spec's (filled) `cmdline`. The conventions are each project's
own (their sources and documentation, as of 2025); `virtbench catalog --presets` prints
them.

A preset may also say how its guest tells that it is done when the VMM does not end with
it (Rumprun halts and leaves QEMU idle): `exited`, a regular expression on a console line
whose first group is the program's exit status; `halted`, the line after which nothing
more happens; `failed`, lines that say why it never ran its program. The console reader
(runtimes/console.py) watches for them and the VM driver (vm/base.py) ends the VMM.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    network: str  # the command line that gives the address, gateway and netmask
    always: str  # what the command line needs besides (the serial console)
    # how the application's own arguments follow on the command line
    args: str
    notes: str  # how it boots and where it prints, for the README and `catalog`
    # where the guest reads its command line on its own disk when it boots from it (a byte
    # offset: OSv's loader reads 63 sectors from LBA 1), None where it has no such place
    cmdline_on_disk: int | None = None
    # it learns its address only by DHCP: the run's bridge serves it a lease per instance
    dhcp: bool = False
    # put before the application's own arguments unless they hold it already
    lead: str = ""
    # the whole command line of (preset, the spec's cmdline filled in, fields), for a
    # guest that reads one document; None: the parts joined by spaces
    compose: Callable[[Preset, str, dict[str, str]], str] | None = None
    exited: str | None = None  # a console line saying its exit status (group 1)
    halted: str | None = None  # the console line after which the guest does nothing
    failed: str | None = None  # console lines that say why its program never ran


def json_document(p: Preset, own: str, values: dict[str, str]) -> str:
    """Rumprun's configuration, one JSON document: `net` (the preset's `network`, filled
    in) only with an address, and `cmdline`, the program's argv split on white space,
    whose first word is only a name: the instance's."""
    doc: dict[str, object] = {}
    if values.get("ip"):
        doc["net"] = json.loads(fill(p.network, values))
    doc["cmdline"] = f"{values['name']} {own}".strip()
    return json.dumps(doc)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "unikraft",
            network="netdev.ip={ip}/{prefixlen}:{gateway}",
            always="",
            args="the application's arguments after ` -- ` (virtbench adds the ` --` "
            "without which Unikraft reads no library parameter)",
            lead="--",
            notes="Unikraft 0.16.1 and later, built with LIBUKNETDEV_EINFO_LIBPARAM (as "
            "its catalog's nginx and redis are): `netdev.ip=ADDR/PREFIX:GATEWAY`. Older "
            "images read netdev.ipv4_addr=, netdev.ipv4_gw_addr= and "
            "netdev.ipv4_subnet_mask=: give those in cmdline with no preset. Boots on QEMU "
            "by multiboot (-kernel), whose loader puts the kernel's path first (argv[0]); on "
            "Firecracker start cmdline with a name for argv[0]. Prints on COM1.",
        ),
        Preset(
            "osv",
            network="--ip=eth0,{ip},{netmask} --defaultgw={gateway} --nameserver={gateway}",
            always="--console=serial",
            args="the program and its arguments, after the loader's options",
            notes="OSv's loader options (every word starting with -) come first, then the "
            'program (cmdline = "/nginx.so -c /nginx/nginx.conf"). On QEMU: kernel = its '
            "loader-stripped.elf and disk = its usr.img built with fs=rofs (virtbench "
            "gives each instance a copy-on-write layer of it; scratch_disk_mib adds a "
            "blank one); on Firecracker add --nopci. Or disk alone (usr.img, no kernel): "
            "SeaBIOS boots it and OSv reads its command line from byte 512 of the disk, "
            "where virtbench writes it on each instance's layer. Prints on COM1.",
            cmdline_on_disk=512,
        ),
        Preset(
            "nanos",
            network="",
            always="",
            args="none under QEMU: its program's arguments and environment are in its "
            "image's manifest",
            notes="Nanos (nanovms/nanos) images are disks with their own boot sector: give "
            "disk alone (no kernel); SeaBIOS boots it on q35, each instance on its own "
            "copy-on-write layer (Nanos writes to its disk at boot). Booted so, Nanos "
            "reads no command line: it takes its address by DHCP (the run's bridge "
            "serves one lease per instance's MAC for runtimes with this preset) unless "
            "its manifest sets one. Prints on COM1; `en1: assigned <address>` says its "
            "network is up.",
            dhcp=True,
        ),
        Preset(
            "includeos",
            network="{ip} {netmask} {gateway}",
            always="",
            args="the service's other arguments (main's argv after the three above)",
            notes="IncludeOS reads its address from the config.json built into the image "
            "(a static address there serves one instance at a time) or from the service's "
            "own code; the command line reaches main(argc, argv). This preset passes "
            "ADDRESS NETMASK GATEWAY as the first arguments, for a service that configures "
            "its interface from them. Boots on QEMU by multiboot (a 64-bit image through "
            "IncludeOS's chainloader); prints on COM1.",
        ),
        Preset(
            "solo5",
            network="--ipv4={ip}/{prefixlen} --ipv4-gateway={gateway}",
            always="",
            args="the unikernel's other boot parameters (--port=8080, ...)",
            notes="MirageOS 3 and 4 on Solo5's virtio target (QEMU, -kernel unikernel.virtio): "
            "the boot parameters are the kernel command line. Mirage 4.10.5 and later "
            "default to DHCP, which the run's bridge does not serve: configure the "
            "unikernel with --no-dhcp (4.11) or boot it with --dhcp=false. Prints on COM1.",
        ),
        Preset(
            "ukl",
            network="-- {ip} {mac}",
            always="console=ttyS0 net.ifnames=0",
            args="the application's arguments, after the address and MAC",
            notes="Unikernel Linux (UKL): its initramfs's /init takes the address (always a "
            "/24) and the MAC that picks the interface after ` -- `, then the "
            "application's arguments; it sets no gateway, which a server on the run's "
            "bridge does not need. Prints on ttyS0.",
        ),
        Preset(
            "linux",
            network="ip={ip}::{gateway}:{netmask}:{name}:eth0:off",
            always="console=ttyS0",
            args="anything else the kernel or its init reads (rdinit=, init=, ...)",
            notes="The kernel's own `ip=` (CONFIG_IP_PNP; an initramfs's init may read it "
            "instead, as virtbench's vb-init and initramfs-tools' do) and the serial "
            "console: a Linux of your own, or a Lupine-style kernel whose init reads ip= "
            "(Lupine's own scripts set a fixed address: edit them to).",
        ),
        Preset(
            "rumprun",
            network='{"if": "vioif0", "type": "inet", "method": "static", "addr": "{ip}", '
            '"mask": "{prefixlen}", "gw": "{gateway}"}',
            always="",
            args="the program's arguments, as the JSON document's \"cmdline\" after "
            "argv[0], which is the instance's name",
            notes="Rumprun (rumpkernel/rumprun, hw platform, `rumprun-bake hw_virtio`) reads "
            "its whole configuration as one JSON document on the kernel command line: "
            'virtbench writes {"net": NETWORK, "cmdline": "<instance name> <cmdline>"} '
            "(net, on vioif0, the first virtio-net, only on the run's bridge); any other "
            "key is fatal to it. Boots on QEMU q35 by multiboot (-kernel), prints on COM1. "
            "Its program's exit is read from the console (`=== _exit(N) called ===`, then "
            "`halted`): QEMU stays up after it, so virtbench ends it there; a "
            "`rumprun: ...` error and `=== bootstrap failed` end the boot as a failure.",
            compose=json_document,
            exited=r"=== (?:ERROR: )?_exit\((\d+)\) called ===",
            halted=r"^halted\b",
            failed=r"^rumprun: |^=== bootstrap failed",
        ),
    )
}


def fields(
    name: str, ip: str, prefixlen: int | None, gateway: str, port: int | None, *, mac: str = ""
) -> dict[str, str]:
    """The values a command-line template may use (empty where the instance has none)."""
    netmask = ""
    if ip and prefixlen is not None:
        netmask = str(ipaddress.IPv4Network(f"0.0.0.0/{prefixlen}").netmask)
    return {
        "name": name,
        "ip": ip,
        "prefixlen": "" if prefixlen is None else str(prefixlen),
        "netmask": netmask,
        "gateway": gateway,
        "port": "" if port is None else str(port),
        "mac": mac,
    }


def fill(template: str, values: dict[str, str]) -> str:
    """`template` with each `{key}` of `values` replaced (other braces left alone: an
    image's own arguments may hold them)."""
    out = template
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out


def cmdline(preset: str | None, own: str, values: dict[str, str]) -> str:
    """An image's whole command line: its preset's parts (the network part only with an
    address), then its own `cmdline`, every field filled in; or the document its
    preset's `compose` makes of them."""
    if preset is None:
        return fill(own, values).strip()
    p = PRESETS[preset]
    if p.lead and p.lead not in own.split():  # Unikraft reads its parameters before a --
        own = f"{p.lead} {own}".strip()
    if p.compose is not None:
        return p.compose(p, fill(own, values).strip(), values)
    parts = [p.always, p.network if values.get("ip") else "", own]
    return fill(" ".join(x for x in parts if x), values).strip()
