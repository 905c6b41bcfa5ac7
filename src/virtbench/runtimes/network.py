"""A run's private bridge: one Linux bridge; per container one veth and one netns, per VM
one tap device.

Traffic stays on this bridge: the host end has the first address of a free private
subnet, instances get the next ones, and no routes or NAT lead anywhere else.
Names: bridge `vb-<rid>-br`, netns `vb-<rid>-<n>` (the instance name), host-side veth
`vb-<rid>-v<k>` and tap `vb-<rid>-t<k>` where k is a short base-36 counter (interface
names fit in 15 characters).

DHCP, for images that take their address only that way (Nanos booted from its disk,
MirageOS 4.10.5 and later by default): Debian's dnsmasq, started by the run on the first
such instance (a daemon of the run's: runtimes/daemon.py, in its ledger, so `virtbench
clean` stops it after a crash) and bound to the bridge alone: no DNS (`--port=0`), no
other interface, no lease file, and only static leases, one per instance, each the very
address virtbench gave the instance's tap for its MAC (a file per instance in
`<state>/dhcp-hosts/`, which dnsmasq watches), so a guest that asks gets what virtbench
records as its address and nobody else gets one. The bridge's own address is the router
offered; no route leads anywhere else.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

from virtbench import naming
from virtbench.errors import InstanceError, VirtbenchError
from virtbench.host import proc
from virtbench.host.state import RunState
from virtbench.runtimes.daemon import Daemon, Daemons

# Candidate subnets, tried in order; the first that overlaps nothing on the host wins.
CANDIDATES = [
    ipaddress.IPv4Network(f"10.{a}.{b}.0/22") for a in (231, 232, 233) for b in range(0, 256, 4)
]
NETNS_DIR = Path("/run/netns")


def _used_networks() -> list[ipaddress.IPv4Network]:
    used = []
    for argv in (["ip", "-j", "-4", "addr"], ["ip", "-j", "-4", "route"]):
        data = json.loads(proc.run(argv, timeout=10).stdout or "[]")
        for item in data:
            for a in item.get("addr_info", []):
                used.append(ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False))
            dst = item.get("dst")
            if dst and dst != "default":
                used.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
    return used


def pick_subnet(used: list[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """The first candidate subnet overlapping none of `used`."""
    for net in CANDIDATES:
        if not any(net.overlaps(u) for u in used):
            return net
    raise VirtbenchError("no free private subnet for a virtbench bridge (10.231-233.x all in use)")


def free_subnet() -> ipaddress.IPv4Network:
    """A candidate subnet no address or route on the host overlaps now."""
    return pick_subnet(_used_networks())


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
        self.dhcp: Dhcp | None = None  # its DHCP server, once an instance asks for one

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

    def lease(self, instance: str, mac: str, ip: str, daemons: Daemons) -> None:
        """Serve `instance` its address `ip` by DHCP, for its NIC's `mac` (withdrawn by
        `detach`); the server started on the first lease."""
        if self.dhcp is None:
            self.dhcp = Dhcp(self, daemons, self.state.dir)
        self.dhcp.serve(instance, mac, ip)

    def detach(self, instance: str) -> None:
        """Delete the instance's netns (which removes its veth pair) or its tap, and its
        DHCP lease; nothing for an instance this bridge did not attach."""
        if self.dhcp is not None:
            self.dhcp.release(instance)
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


DNSMASQ = "dnsmasq"
LEASE_S = 3600


class Dhcp:
    """The DHCP server of one run's bridge, started on first use (see the module's
    docstring's last part)."""

    def __init__(self, bridge: BridgeNetwork, daemons: Daemons, state_dir: Path) -> None:
        self.bridge = bridge
        self.daemons = daemons
        self.hosts = state_dir / "dhcp-hosts"
        self.pid_file = state_dir / "dnsmasq.pid"

    def argv(self, binary: str) -> list[str]:
        assert self.bridge.subnet is not None
        net = self.bridge.subnet
        return [
            binary,
            "--keep-in-foreground",
            "--conf-file=/dev/null",  # the host's own configuration is not ours
            "--port=0",  # no DNS
            f"--interface={self.bridge.bridge}",
            "--bind-interfaces",
            "--except-interface=lo",
            f"--dhcp-range={net.network_address},static,{net.netmask},{LEASE_S}",
            f"--dhcp-hostsdir={self.hosts}",
            f"--dhcp-option=option:router,{self.bridge.host_ip}",
            "--dhcp-authoritative",
            "--leasefile-ro",
            "--no-resolv",
            "--no-hosts",
            f"--pid-file={self.pid_file}",
            # as root: its hosts are in the run's state directory, which a user's state
            # directory may put under parents only root can enter
            "--user=root",
            "--log-dhcp",
            "--log-facility=-",
        ]

    def _up(self) -> bool:
        """dnsmasq writes its pid file once its sockets are bound."""
        try:
            pid = int(self.pid_file.read_text().strip() or 0)
        except (OSError, ValueError):
            return False
        return pid > 0 and os.path.exists(f"/proc/{pid}")

    def serve(self, instance: str, mac: str, ip: str) -> None:
        """A lease of `ip` for `mac` (the instance's NIC), the server started if need be."""
        if ipaddress.ip_address(ip) not in (self.bridge.subnet or ()):
            raise InstanceError(f"{instance}: {ip} is not on the run's bridge")
        binary = shutil.which(DNSMASQ)
        if binary is None:
            raise InstanceError(
                f"{instance} takes its address by DHCP, and dnsmasq is not installed "
                "(apt-get install dnsmasq-base)"
            )
        self.hosts.mkdir(exist_ok=True)
        (self.hosts / instance).write_text(f"{mac},{ip}\n")
        self.daemons.ensure(Daemon(self.name, self._up, self.argv(binary), ready_timeout=30))

    @property
    def name(self) -> str:
        return f"dnsmasq-{self.bridge.bridge}"

    def release(self, instance: str) -> None:
        """The instance's lease withdrawn (nothing if it had none): its file removed, and
        dnsmasq, which notices new files but not removed ones, told to read them again
        (SIGHUP, to the process this run started)."""
        try:
            (self.hosts / instance).unlink()
        except FileNotFoundError:
            return
        started = self.daemons.started.get(self.name)
        if started is not None:
            proc.signal_child(started.popen, signal.SIGHUP)
