"""A load-generator host of its own: the clients run there, over one SSH connection.

`open` (before the experiments' checks): the connection's master, then on the load
generator a directory of the run's (`/tmp/vb-<run-id>-clients`). Each experiment's check
(`need`) copies there the artifact's static clients its workloads use (vb-rr, vb-mcload:
static, so they run on any Linux) and looks for the others (wrk, redis-benchmark, ...:
`make setup` installs them). This host's address as the load generator sees it is where ssh says its
connection came from (`$SSH_CONNECTION`).

How the client reaches an instance (recorded in each sample as `client_path`):
  host network     the server listens on this host's own network: this host's address
  routed bridge    an instance on the run's bridge: the load generator gets a route to
                   the bridge's subnet via this host (which must forward IPv4:
                   net.ipv4.ip_forward = 1), removed at the run's end

Per trial, one command through the master: the client under `timeout` (so that a client
this host gave up on does not go on there), its output back here. Both the directory and
the route are in the run's ledger before they exist, so `virtbench clean` removes them
after a crash (run/cleanup.py, `remote_leftovers`).
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from virtbench import naming
from virtbench.errors import InstanceError, ListingError, RuntimeUnavailable
from virtbench.host import proc, state
from virtbench.loadgen import Clients, baseline, cpu
from virtbench.loadgen.ssh import Ssh, once
from virtbench.runtimes.model import RuntimeContext

KILL_AFTER_S = 5  # a client still there this long after its limit is killed


def clients_dir(run_id: str) -> str:
    """The run's directory on the load generator."""
    return f"/tmp/{naming.name(run_id, 'clients')}"


class Remote(Clients):
    """The clients on `destination` (an ssh destination, with ssh `-o` options)."""

    def __init__(self, destination: str, options: Sequence[str], ctx: RuntimeContext) -> None:
        self.ctx = ctx
        self.ssh = Ssh(destination, options, ctx.run_id, ctx.daemons)
        self.where = destination
        self.dir = clients_dir(ctx.run_id)
        self.this_host = ""  # this host's address as the load generator sees it
        self.routed: str | None = None  # the bridge subnet routed to, once it is
        self.copied: set[str] = set()  # the static clients in the run's directory there
        self.busy: cpu.Busy | None = None  # its CPUs during the last client command

    def open(self) -> None:
        """Connect, learn this host's address as the load generator sees it, make the
        run's directory there, and measure the pair's baselines (loadgen/baseline.py)."""
        self.ctx.state.record("loadgen", self.where, options=self.ssh.options, dir=self.dir)
        self.ssh.open()
        res = self.ssh.shell(f'mkdir -p {self.dir} && echo "$SSH_CONNECTION"')
        fields = res.stdout.split()
        if res.returncode != 0 or len(fields) != 4:
            raise RuntimeUnavailable(f"load generator {self.where}: {res.brief()}")
        self.this_host = fields[0]
        self.facts = {
            "host": self.where,
            "this_host_there": self.this_host,
            "facts": baseline.host_facts(self.ssh),
            **baseline.measure(self.ssh, self.this_host),
        }

    def need(self, programs: Sequence[str], artifact: Path) -> str | None:
        """The artifact's static clients among `programs` copied to the run's directory
        there (once); the others looked for on its PATH."""
        ours = [p for p in programs if p.startswith("/bin/vb-") and p not in self.copied]
        others = [p for p in programs if not p.startswith("/bin/vb-")]
        script = "; ".join(f"command -v {shlex.quote(p)} >/dev/null || echo {p}" for p in others)
        res = self.ssh.shell(script or "true")
        if res.returncode != 0:
            return f"cannot ask the load generator {self.where}: {res.brief()}"
        if missing := res.stdout.split():
            return (
                f"needs {', '.join(missing)} on the load generator {self.where} (`make "
                "setup` in a virtbench checkout there)"
            )
        if ours:
            if why := self._copy([artifact / p.lstrip("/") for p in ours]):
                return why
            self.copied.update(ours)
        return None

    def _copy(self, files: list[Path]) -> str | None:
        for f in files:
            if why := self.ssh.put(f, f"{self.dir}/{f.name}"):
                return f"cannot copy its clients to the load generator {self.where}: {why}"
        return None

    def run(
        self, argv: Sequence[str], artifact: Path, timeout: float, cpus: str | None = None
    ) -> proc.Result:
        """One client command on the load generator (the whole host is the client's: no
        pinning), under `timeout` there as here, its CPUs' use read around it."""
        del artifact, cpus
        mapped = [f"{self.dir}/{argv[0][5:]}" if argv[0].startswith("/bin/vb-") else argv[0]]
        limited = ["timeout", "-k", str(KILL_AFTER_S), f"{timeout:g}", *mapped, *argv[1:]]
        res = self.ssh.run(["sh", "-c", cpu.WRAPPER, "sh", *limited], timeout + 2 * KILL_AFTER_S)
        stderr, self.busy = cpu.split(res.stderr)  # its CPUs' counters out of its output
        res = dataclasses.replace(res, stderr=stderr)
        if res.returncode == 124:  # timeout's own status: the client ran past its limit
            raise proc.CommandTimeout(res, f"{argv[0]} on {self.where}")
        if res.returncode == 255:  # ssh's own: the connection is lost
            raise InstanceError(f"load generator {self.where} lost: {res.brief()}")
        return res

    def trial(self) -> dict[str, Any]:
        if self.busy is None:
            return {}
        return {**self.busy.params(), "loadgen_cpus": self.busy.cpus}

    def address(self, address: str | None, network: str) -> str:
        if network != "bridge" or not address:
            return self.this_host
        self._route()
        return address

    def _route(self) -> None:
        """The load generator's route to the run's bridge, via this host (once)."""
        bridge = self.ctx.bridge
        if self.routed is not None or bridge is None or bridge.subnet is None:
            return
        forwarding = Path("/proc/sys/net/ipv4/ip_forward").read_text().strip()
        if forwarding != "1":
            raise InstanceError(
                f"load generator {self.where} reaches the run's bridge through this host, "
                "which does not forward IPv4: sysctl -w net.ipv4.ip_forward=1 (or use "
                'network = "host")'
            )
        subnet = str(bridge.subnet)
        self.ctx.state.record(
            "loadgen-route", self.where, options=self.ssh.options, subnet=subnet, via=self.this_host
        )
        res = self.ssh.run(["ip", "route", "replace", subnet, "via", self.this_host], 30)
        if res.returncode != 0:
            raise InstanceError(f"load generator {self.where}: route to {subnet}: {res.brief()}")
        self.routed = subnet

    def reach(self, address: str, port: int, protocol: str, timeout: float) -> str | None:
        """Until the load generator reaches the server: a TCP connection (bash's
        /dev/tcp), or for UDP and ICMP servers an answered ping."""
        if protocol == "tcp":
            probe = f"(exec 3<>/dev/tcp/{address}/{port}) 2>/dev/null"
        else:
            probe = f"ping -c 1 -W 1 {address} >/dev/null 2>&1"
        script = f"until {probe}; do sleep 0.05; done"
        res = self.ssh.run(["timeout", f"{timeout:g}", "bash", "-c", script], timeout + 10)
        if res.returncode == 0:
            return None
        what = f"{address}:{port}" if protocol == "tcp" else address
        return f"load generator {self.where} cannot reach {what} in {timeout:g} s ({res.brief()})"

    def client_params(self, address: str) -> dict[str, Any]:
        path = "host network" if address == self.this_host else "routed bridge"
        return {"client_host": self.where, "client_path": path}

    def close(self) -> list[str]:
        """Remove the route and the directory, then end the connection; what resisted."""
        script = f"rm -rf {self.dir}"
        if self.routed is not None:
            script += f"; ip route del {self.routed} via {self.this_host}"
        errors = []
        if self.ssh.daemons.started.get(self.ssh.name) is not None:
            res = self.ssh.shell(script)
            if res.returncode == 255:  # the connection is gone: a fresh one, once
                res = once(self.where, self.ssh.options, script)
            if res.returncode != 0:
                errors.append(
                    f"load generator {self.where}: {self.dir} and its route not removed "
                    f"({res.brief()}): `virtbench clean` removes them once it answers"
                )
        self.ssh.close()
        return errors


def _recorded(run_dir: Path) -> dict[str, dict[str, Any]]:
    """What a run's ledger says it made on each load generator: its options, directory
    and route (subnet, via)."""
    found: dict[str, dict[str, Any]] = {}
    for rec in state.recorded(run_dir, "loadgen", "loadgen-route"):
        host = found.setdefault(rec["name"], {"options": rec.get("options", [])})
        host.update({k: rec[k] for k in ("dir", "subnet", "via") if k in rec})
    return found


def _removal(made: dict[str, Any], there: list[str]) -> str:
    """The script that removes what `there` says is still on the load generator."""
    steps = [f"rm -rf {shlex.quote(made['dir'])}"] if "dir" in there else []
    if "route" in there:
        steps.append(f"ip route del {made['subnet']} via {made['via']}")
    return " && ".join(steps)


def leftovers(run_dir: Path) -> list[tuple[str, str, str]]:
    """(host, what, removal script) for each load generator a crashed run left its
    directory or route on, asked of that host; one that cannot be asked raises
    ListingError (never read as "nothing left")."""
    out = []
    for host, made in _recorded(run_dir).items():
        probe = [f"test -d {shlex.quote(made['dir'])} && echo dir"] if "dir" in made else []
        if "subnet" in made:
            probe.append(
                f"ip route show {made['subnet']} | grep -q 'via {made['via']} ' && echo route"
            )
        res = once(host, made["options"], "; ".join(probe) + "; true", timeout=60)
        if res.returncode != 0:
            raise ListingError(f"the load generator {host}: {res.brief()}")
        there = res.stdout.split()
        if there:
            what = " and ".join(
                {"dir": made.get("dir", ""), "route": f"route to {made.get('subnet')}"}[k]
                for k in there
            )
            out.append((host, what, json.dumps([made["options"], _removal(made, there)])))
    return out


def remove_leftover(host: str, detail: str) -> str | None:
    """Remove what `leftovers` found on `host` (its `detail`); why not, or None."""
    options, script = json.loads(detail)
    res = once(host, options, script, timeout=60)
    return None if res.returncode == 0 else f"load generator {host}: {res.brief()}"
