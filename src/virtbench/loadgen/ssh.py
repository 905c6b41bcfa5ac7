"""One SSH connection to a load-generator host, kept open for a whole run.

OpenSSH's own connection sharing does the work: a master (`ssh -M -N`) started once, as a
daemon of the run (runtimes/daemon.py: in its ledger with its pid, so `virtbench clean`
stops it after a crash), and every command after it a client of the master's control
socket (`ssh -S SOCKET`), which opens a session on the connection already made: no new
TCP connection, key exchange or login per trial. virtbench runs no agent and no
protocol of its own on the other host: only commands in its shell.

The destination is what ssh takes (`[user@]host`, or a `Host` of ~/.ssh/config), with
the user's `-o` options (`IdentityFile=...`, `Port=...`); BatchMode is always on: a
host that asks for a password is an error, never a prompt in the middle of a run.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from virtbench.errors import RuntimeUnavailable, VirtbenchError
from virtbench.host import proc
from virtbench.runtimes.daemon import Daemon, Daemons

SOCKET_DIR = Path("/run/virtbench/ssh")  # short: a unix socket's path has 107 bytes at most
CONNECT_TIMEOUT_S = 15
# every connection: no prompt, and a dead peer noticed within ~15 s
BASE_OPTIONS = ("BatchMode=yes", "ServerAliveInterval=5", "ServerAliveCountMax=3")


def ssh_argv(destination: str, options: Sequence[str], *extra: str) -> list[str]:
    """ssh with the run's options for `destination`, `extra` before the destination."""
    opts = [*BASE_OPTIONS, f"ConnectTimeout={CONNECT_TIMEOUT_S}", *options]
    return ["ssh", *(a for o in opts for a in ("-o", o)), *extra, destination]


class Ssh:
    """The run's connection to `destination`: `open()` starts the master, `run()` a
    command through it, `close()` ends it."""

    def __init__(
        self, destination: str, options: Sequence[str], run_id: str, daemons: Daemons
    ) -> None:
        self.destination = destination
        self.options = list(options)
        self.daemons = daemons
        self.name = f"ssh-{run_id}"
        self.socket = SOCKET_DIR / f"{run_id}.sock"

    def _argv(self, *extra: str) -> list[str]:
        return ssh_argv(self.destination, self.options, "-S", str(self.socket), *extra)

    def _up(self) -> bool:
        check = proc.run(self._argv("-O", "check"), check=False, timeout=10)
        return check.returncode == 0

    def open(self) -> None:
        """Start the master and wait until its socket answers (a refused login, an
        unknown host key or no route: RuntimeUnavailable with ssh's own words)."""
        SOCKET_DIR.mkdir(parents=True, exist_ok=True)
        self.socket.unlink(missing_ok=True)  # a crashed run's, whose master is gone
        master = self._argv("-M", "-N", "-o", "ControlPersist=no")
        try:
            self.daemons.ensure(Daemon(self.name, self._up, master, ready_timeout=60))
        except RuntimeUnavailable as exc:
            raise RuntimeUnavailable(f"load generator {self.destination}: {exc}") from None

    def run(self, argv: Sequence[str], timeout: float, *, input: str | None = None) -> proc.Result:
        """`argv` run in the other host's shell, through the master (quoted: it arrives
        as these words); its exit status, output and time. Status 255: ssh's own
        failure (the connection lost)."""
        command = shlex.join(argv)
        return proc.run(
            [*self._argv("-o", "ControlMaster=no"), "--", command],
            check=False,
            timeout=timeout,
            input=input,
        )

    def put(self, local: Path, remote: str, timeout: float = 120) -> str | None:
        """Copy the file `local` to the path `remote` there, executable (its bytes on
        ssh's standard input: nothing needed there but sh and cat); why not, or None."""
        script = shlex.join(["sh", "-c", 'cat > "$1" && chmod 755 "$1"', "sh", remote])
        argv = [*self._argv("-o", "ControlMaster=no"), "--", script]
        try:
            done = proc.run(argv, check=False, timeout=timeout, stdin_path=local)
        except (OSError, VirtbenchError) as exc:  # no such file or command, a timeout
            return f"{local.name}: {exc}"
        return None if done.returncode == 0 else f"{local.name}: {done.brief()}"

    def shell(self, script: str, timeout: float = 60) -> proc.Result:
        """A shell script run on the other host (its `sh`)."""
        return self.run(["sh", "-c", script], timeout)

    def close(self) -> None:
        """End the master (its sessions end with it)."""
        self.daemons.stop(self.name)
        self.socket.unlink(missing_ok=True)


def once(destination: str, options: Sequence[str], script: str, timeout: float = 60) -> proc.Result:
    """A shell script run on `destination` over a connection of its own (no master):
    what `virtbench clean` uses after a crash."""
    argv = [*ssh_argv(destination, options), "--", shlex.join(["sh", "-c", script])]
    return proc.run(argv, check=False, timeout=timeout)
