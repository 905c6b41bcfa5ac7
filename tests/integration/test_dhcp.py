"""The run's bridge serving DHCP (runtimes/network.py) with Debian's real dnsmasq: a client
on the bridge asking for a leased MAC is offered exactly the address virtbench gave it,
an unknown MAC is offered nothing, and the server goes with the run's daemons.

The client is a DHCPDISCOVER sent from a network namespace on the bridge (what a guest's
first packet is), by a few lines of Python run there with `ip netns exec`."""

from __future__ import annotations

import ipaddress
import subprocess
import sys

from virtbench import naming
from virtbench.runtimes.network import BridgeNetwork

# DHCPDISCOVER for MAC argv[1] with the broadcast flag; prints the offered address (yiaddr)
# or "none" after argv[2] seconds
CLIENT = r"""
import socket, struct, sys
mac = bytes.fromhex(sys.argv[1].replace(":", ""))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"eth0")
s.bind(("0.0.0.0", 68))
xid = 0x5642_0001
msg = struct.pack("!BBBBIHH4s4s4s4s16s64s128s", 1, 1, 6, 0, xid, 0, 0x8000, bytes(4),
                  bytes(4), bytes(4), bytes(4), mac.ljust(16, b"\0"), bytes(64), bytes(128))
msg += b"\x63\x82\x53\x63" + b"\x35\x01\x01" + b"\xff"
s.sendto(msg, ("255.255.255.255", 67))
s.settimeout(float(sys.argv[2]))
try:
    while True:
        data = s.recv(2048)
        if struct.unpack("!I", data[4:8])[0] == xid and data[28:34] == mac:
            print(socket.inet_ntoa(data[16:20]))
            break
except socket.timeout:
    print("none")
"""


def discover(netns: str, mac: str, wait_s: float) -> str:
    argv = ["ip", "netns", "exec", netns, sys.executable, "-c", CLIENT, mac, str(wait_s)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip()


def test_the_bridge_offers_each_instance_its_own_address_and_nobody_else_one(ctx):
    bridge = BridgeNetwork(ctx.run_id, ctx.state)
    ctx.bridge = bridge  # closed by the fixture, after the daemons
    bridge.ensure()
    client = naming.name(ctx.run_id, "dhcpc")
    bridge.attach(client)
    assert bridge.subnet is not None
    leased = str(list(bridge.subnet.hosts())[100])
    bridge.lease("vb-guest-1", "06:00:0a:00:00:64", leased, ctx.daemons)
    started = ctx.daemons.started[f"dnsmasq-{bridge.bridge}"]
    assert started.popen.poll() is None
    assert discover(client, "06:00:0a:00:00:64", 20) == leased
    assert discover(client, "06:00:0a:00:00:65", 3) == "none"  # no lease: no address
    bridge.dhcp.release("vb-guest-1")  # dnsmasq reads its hosts again on the SIGHUP it gets
    offers = []
    while len(offers) < 3 and "none" not in offers:  # withdrawn with it (once read again)
        offers.append(discover(client, "06:00:0a:00:00:64", 3))
    assert offers[-1] == "none", offers
    assert ipaddress.ip_address(leased) in bridge.subnet
    ctx.daemons.close()
    assert started.popen.poll() is not None  # stopped by its pid, waited for
