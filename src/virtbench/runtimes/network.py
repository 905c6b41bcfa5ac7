"""A run's private bridge: one Linux bridge; per container one veth and one netns, per VM
one tap device.

Traffic stays on this bridge: the host end has the first address of a free private
subnet, instances get the next ones, and no routes or NAT lead anywhere else.
Names: bridge `vb-<rid>-br`, netns `vb-<rid>-<n>` (the instance name), host-side veth
`vb-<rid>-v<k>` and tap `vb-<rid>-t<k>` where k is a short base-36 counter (interface
names fit in 15 characters).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from pathlib import Path

from virtbench import naming
from virtbench.errors import VirtbenchError
from virtbench.host import proc
from virtbench.host.state import RunState

# Candidate subnets, tried in order; the first that overlaps nothing on the host wins.
CANDIDATES = [
    ipaddress.ip_network(f"10.{a}.{b}.0/22") for a in (231, 232, 233) for b in range(0, 256, 4)
]
NETNS_DIR = Path("/run/netns")


def _used_networks() -> list[ipaddress.IPv4Network]:
    used = []
    for argv in (["ip", "-j", "-4", "addr"], ["ip", "-j", "-4", "route"]):
        data = json.loads(proc.run(argv, timeout=10).stdout or "[]")
        for item in data:
            for a in item.get("addr_info", []):
                used.append(ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False))
            dst = item.get("dst")
            if dst and dst != "default":
                used.append(ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False))
    return used


def pick_subnet(used: list[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """The first candidate subnet overlapping none of `used`."""
    for net in CANDIDATES:
        if not any(net.overlaps(u) for u in used):
            return net
    raise VirtbenchError("no free private subnet for a virtbench bridge (10.231-233.x all in use)")


class BridgeNetwork:
    """Created on first use, removed by `close()` (and by `virtbench clean` by name)."""

    def __init__(self, run_id: str, state: RunState) -> None:
        self.run_id = run_id
        self.state = state
        self.bridge = naming.ifname(run_id, "br")
        self.subnet: ipaddress.IPv4Network | None = None
        self._hosts: list[ipaddress.IPv4Address] = []
        self._next = 0
        self._links: dict[str, str] = {}  # instance -> its host-side link (veth or tap)
        self._idx: dict[str, int] = {}
        self._free: list[int] = []
        self._taps: set[str] = set()  # instances with a tap (no netns)

    @property
    def host_ip(self) -> str:
        assert self.subnet is not None
        return str(self._hosts[0])

    def ensure(self) -> None:
        if self.subnet is not None:
            return
        self.subnet = pick_subnet(_used_networks())
        self._hosts = list(self.subnet.hosts())
        self.state.record("bridge", self.bridge, subnet=str(self.subnet))
        proc.run(["ip", "link", "add", self.bridge, "type", "bridge"], what="ip link add bridge")
        proc.run(
            ["ip", "addr", "add", f"{self.host_ip}/{self.subnet.prefixlen}", "dev", self.bridge]
        )
        proc.run(["ip", "link", "set", self.bridge, "up"])

    @property
    def prefixlen(self) -> int:
        assert self.subnet is not None
        return self.subnet.prefixlen

    def _allocate(self) -> tuple[int, str]:
        self.ensure()
        assert self.subnet is not None
        if self._free:
            idx = self._free.pop()
        else:
            self._next += 1
            if self._next >= len(self._hosts):
                raise VirtbenchError(f"bridge {self.bridge}: subnet {self.subnet} is full")
            idx = self._next
        return idx, str(self._hosts[idx])

    def attach_tap(self, instance: str, mac_of: Callable[[str], str]) -> tuple[str, str]:
        """Make a tap device on the bridge for VM `instance`; return (tap name, the address
        the guest is to configure on its NIC). `mac_of(address)`: the guest NIC's MAC, made
        the host's neighbour entry for the address at once, so that the host's first
        packets to the guest go out without waiting for ARP (whose retries come a second
        apart: a port probed while the guest boots would be seen up to a second late)."""
        idx, ip = self._allocate()
        tap = naming.ifname(self.run_id, "t" + naming.base36(idx))
        self.state.record("tap", tap)
        self._links[instance], self._idx[instance] = tap, idx
        self._taps.add(instance)
        batch = (
            f"tuntap add dev {tap} mode tap\nlink set {tap} master {self.bridge} up\n"
            f"neigh replace {ip} lladdr {mac_of(ip)} dev {self.bridge} nud permanent\n"
        )
        proc.run(["ip", "-batch", "-"], input=batch, what="ip tuntap add")
        return tap, ip

    def attach(self, instance: str) -> tuple[Path, str]:
        """Make netns `instance` with eth0 on the bridge; return (netns path, address)."""
        idx, ip = self._allocate()
        assert self.subnet is not None
        veth = naming.ifname(self.run_id, "v" + naming.base36(idx))
        self.state.record("netns", instance)
        self.state.record("veth", veth)
        self._links[instance], self._idx[instance] = veth, idx
        proc.run(["ip", "netns", "add", instance], what="ip netns add")
        proc.run(
            ["ip", "-batch", "-"],
            input=(
                f"link add {veth} type veth peer name eth0 netns {instance}\n"
                f"link set {veth} master {self.bridge} up\n"
            ),
            what="ip link add veth",
        )
        proc.run(
            ["ip", "-n", instance, "-batch", "-"],
            input=(
                f"addr add {ip}/{self.subnet.prefixlen} dev eth0\n"
                "link set lo up\nlink set eth0 up\n"
                f"route add default via {self.host_ip}\n"
            ),
            what="ip netns setup",
        )
        return NETNS_DIR / instance, ip

    def detach(self, instance: str) -> None:
        """Delete the instance's netns (which removes its veth pair) or its tap; nothing for
        an instance this bridge did not attach."""
        link = self._links.pop(instance, None)
        if link is None:
            return
        batch = f"link delete {link}\n"
        if instance in self._taps:
            self._taps.discard(instance)
            # its neighbour entry goes too: the address may go to a container next
            batch += f"neigh del {self._hosts[self._idx[instance]]} dev {self.bridge}\n"
        else:
            proc.run(["ip", "netns", "delete", instance], check=False)
        proc.run(["ip", "-force", "-batch", "-"], input=batch, check=False)
        self._free.append(self._idx.pop(instance))

    def close(self) -> None:
        for instance in list(self._links):
            self.detach(instance)
        if self.subnet is not None:
            proc.run(["ip", "link", "delete", self.bridge], check=False)
            self.subnet = None
