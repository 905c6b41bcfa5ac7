"""DHCP on a run's bridge, for images that take their address only that way (Nanos booted
from its disk, MirageOS 4.10.5 and later by default).

Debian's dnsmasq, started by the run on the first such instance (a daemon of the run's:
runtimes/daemon.py, in its ledger, so `virtbench clean` stops it after a crash) and bound
to the bridge alone: no DNS (`--port=0`), no other interface, no lease file, and only
static leases, one per instance, each the very address virtbench gave the instance's tap
for its MAC (a file per instance in `<state>/dhcp-hosts/`, which dnsmasq watches), so a
guest that asks gets what virtbench records as its address and nobody else gets one.
The bridge's own address is the router offered; no route leads anywhere else.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import signal
from pathlib import Path

from virtbench.errors import InstanceError
from virtbench.runtimes.daemon import Daemon, Daemons
from virtbench.runtimes.network import BridgeNetwork

DNSMASQ = "dnsmasq"
LEASE_S = 3600


class Dhcp:
    """The DHCP server of one run's bridge, started on first use."""

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
        if started is not None and started.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(started.popen.pid, signal.SIGHUP)
