"""Test hosts for fleet mode: network namespaces on this machine, each with its own sshd on
its own address, joined by a bridge that holds the controller's address.

They share this machine's files, processes and cgroups; only the network is theirs. So
every host gets its own directories (virtbench_dir, state, data) through the inventory,
and "killing a host" means SIGKILL to every process in its namespace. Names start `vbf`
(not `vb-<run id>-`): `virtbench clean` must never take them for a run's leftovers; the
fixture removes them itself.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"

SSHD_CONFIG = """\
ListenAddress {addr}:22
HostKey {dir}/ssh_host_ed25519_key
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
Subsystem sftp /usr/lib/openssh/sftp-server
MaxStartups 50:30:100
MaxSessions 50
ClientAliveInterval 5
ClientAliveCountMax 3
"""


def available() -> str | None:
    """Why test hosts cannot be made here (None: they can)."""
    if not Path(SSHD).exists():
        return f"{SSHD} missing (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen missing (apt-get install openssh-client)"
    if os.geteuid() != 0:
        return "test hosts need root (network namespaces)"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def _free_subnet() -> str:
    """10.213.N (N in 100..199) that no route of this host covers."""
    routes = subprocess.run(
        ["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True, check=True
    ).stdout
    for _ in range(50):
        net = f"10.213.{100 + secrets.randbelow(100)}"
        if f"{net}." not in routes:
            return net
    raise RuntimeError("no free 10.213.x.0/24 subnet for the test hosts")


class Hosts:
    """`n` test hosts h1..hn under `root`; `start()`, `inventory()`, `kill()`, `close()`."""

    def __init__(
        self, root: Path, n: int, cpus: dict[str, str] | None = None, plain_home: bool = False
    ) -> None:
        self.root = root
        self.cpus = cpus or {}  # a host's CPUs: its sshd's affinity, which its sessions inherit
        # root's home an empty directory for its sshd (a mount namespace of its own): its
        # sessions' shells start without this machine's rc files, as a dedicated account's
        self.plain_home = plain_home
        self.tag = "vbf" + secrets.token_hex(2)  # 7 characters: names fit IFNAMSIZ
        self.net = _free_subnet()
        self.gateway = f"{self.net}.1"
        self.names = [f"h{i}" for i in range(1, n + 1)]
        self.bridge = f"{self.tag}br"
        self.sshd: dict[str, subprocess.Popen[bytes]] = {}
        self.key = root / "id_fleet"

    def ns(self, host: str) -> str:
        return f"{self.tag}{host}"

    def addr(self, host: str) -> str:
        return f"{self.net}.{self.names.index(host) + 2}"

    def dir(self, host: str) -> Path:
        return self.root / host

    def start(self) -> Hosts:
        self.root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.key)],
            check=True,
            timeout=30,
        )
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for h in self.names:
            ns, veth, d = self.ns(h), f"{self.ns(h)}v", self.dir(h)
            d.mkdir(parents=True, exist_ok=True)
            _ip("netns", "add", ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", veth, "master", self.bridge, "up")
            _ip("-n", ns, "addr", "add", f"{self.addr(h)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "set", "eth0", "up")
            subprocess.run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-f",
                    str(d / "ssh_host_ed25519_key"),
                ],
                check=True,
                timeout=30,
            )
            shutil.copyfile(f"{self.key}.pub", d / "authorized_keys")
            (d / "sshd_config").write_text(SSHD_CONFIG.format(addr=self.addr(h), dir=d))
            self.start_sshd(h)
        return self

    def start_sshd(self, host: str) -> None:
        d = self.dir(host)
        log = open(d / "sshd.log", "ab")  # noqa: SIM115 - sshd writes it for its life
        self.sshd[host] = subprocess.Popen(
            # nsenter, not `ip netns exec`: that also remounts /sys for the namespace, which
            # hides the cgroup hierarchies a host's virtbench needs
            [
                *(["taskset", "-c", self.cpus[host]] if host in self.cpus else []),
                "nsenter",
                f"--net=/run/netns/{self.ns(host)}",
                *self._home(d),
                SSHD,
                "-D",
                "-e",
                "-f",
                str(d / "sshd_config"),
            ],
            stdout=log,
            stderr=log,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection((self.addr(host), 22), 1):
                return
            if self.sshd[host].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"sshd of {host} did not start: {(d / 'sshd.log').read_text()}")
            time.sleep(0.1)

    def _home(self, d: Path) -> list[str]:
        """What starts sshd with root's home an empty directory (plain_home), else nothing."""
        if not self.plain_home:
            return []
        (d / "home").mkdir(exist_ok=True)
        script = f'mount --bind {d / "home"} "$HOME" && exec "$@"'
        return ["unshare", "--mount", "sh", "-c", script, "sh"]

    def host_vars(self, host: str) -> dict[str, object]:
        d = self.dir(host)
        return {
            "ansible_host": self.addr(host),
            "virtbench_dir": str(d / "virtbench"),
            "virtbench_env": {
                "VIRTBENCH_STATE_DIR": str(d / "state"),
                "VIRTBENCH_DATA_DIR": str(d / "data"),
            },
        }

    def inventory(self, path: Path, hosts: list[str] | None = None) -> Path:
        """An INI inventory of these hosts (or some of them), as a user would write one."""
        lines = ["[bench]"]
        for h in hosts or self.names:
            v = self.host_vars(h)
            env = json.dumps(v["virtbench_env"]).replace('"', "'")
            lines.append(
                f"{h} ansible_host={v['ansible_host']} virtbench_dir={v['virtbench_dir']}"
                f' virtbench_env="{env}"'
            )
        lines += [
            "[bench:vars]",
            "ansible_user=root",
            f"ansible_ssh_private_key_file={self.key}",
            "ansible_ssh_common_args='-o StrictHostKeyChecking=no "
            "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR'",
            "ansible_python_interpreter=/usr/bin/python3",
            "virtbench_offline=true",  # the namespaces have no route beyond this machine
        ]
        path.write_text("\n".join(lines) + "\n")
        return path

    def pids(self, host: str) -> list[int]:
        res = subprocess.run(
            ["ip", "netns", "pids", self.ns(host)], capture_output=True, text=True, timeout=30
        )
        return [int(p) for p in res.stdout.split()]

    def kill(self, host: str) -> list[int]:
        """The host dies: SIGKILL to every process in its namespace (sshd, its sessions and
        whatever they ran, virtbench included). Returns the pids."""
        pids = self.pids(host)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        p = self.sshd.get(host)
        if p is not None:
            p.wait(30)
        return pids

    def kill_sshd(self, host: str) -> list[int]:
        """Only the host's sshd dies: the listener and its per-connection processes, by
        pid (SIGKILL); what the sessions ran is orphaned, not killed. Returns the pids."""
        import psutil

        listener = psutil.Process(self.sshd[host].pid)
        procs = [
            listener,
            *(c for c in listener.children(recursive=True) if c.name().startswith("sshd")),
        ]
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                p.kill()
        self.sshd[host].wait(30)
        return [p.pid for p in procs]

    def close(self) -> None:
        for h in self.names:
            for pid in self.pids(h):  # sshd and anything still running in the host
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            p = self.sshd.get(h)
            if p is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(30)
            subprocess.run(["ip", "link", "del", f"{self.ns(h)}v"], capture_output=True)
            subprocess.run(["ip", "netns", "del", self.ns(h)], capture_output=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
