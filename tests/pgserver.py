"""A throwaway PostgreSQL server for tests: initdb into a fresh directory, a postmaster on
127.0.0.1 at a free port with its unix socket in that directory, password logins over TCP,
stopped by its own pid (never by name) and removed afterwards.

initdb and postgres refuse to run as root, so as root they run as the `postgres` system
user (Debian's postgresql package creates it); otherwise as the current user.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from virtbench.workloads import postgres

BIN = Path(postgres.BIN)
USER = "vb"  # the database superuser the tests log in as


def available() -> str | None:
    """Why a server cannot be started here (None: it can)."""
    if not (BIN / "initdb").exists() or not (BIN / "postgres").exists():
        return f"PostgreSQL not in {BIN} (scripts/install-deps.sh installs it)"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "no 'postgres' user to run the server as (it comes with PostgreSQL)"
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (make setup)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One PostgreSQL server in its own directory; `start()`, `database()`, `stop()`."""

    def __init__(self, also_on: str | None = None) -> None:
        """`also_on`: another address of this host to listen on (a fleet test's bridge),
        whose /24 may log in with the password too."""
        self.also_on = also_on
        self.dir = Path(tempfile.mkdtemp(prefix="vb-pg-"))
        self.data = self.dir / "data"
        self.password = secrets.token_hex(12)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            self._as = {"user": "postgres", "group": "postgres", "extra_groups": []}
            shutil.chown(self.dir, "postgres", "postgres")
        self._n = 0

    def _run(self, *argv: str) -> None:
        subprocess.run(argv, cwd=self.dir, check=True, capture_output=True, timeout=120, **self._as)

    def start(self) -> PgServer:
        pwfile = self.dir / "pw"
        pwfile.write_text(self.password + "\n")
        if self._as:
            shutil.chown(pwfile, "postgres", "postgres")
        self._run(
            str(BIN / "initdb"),
            "-D",
            str(self.data),
            "-U",
            USER,
            f"--pwfile={pwfile}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--no-locale",
            "-E",
            "UTF8",
            "--no-sync",
        )
        pwfile.unlink()
        listen = "127.0.0.1"
        if self.also_on:
            listen += f",{self.also_on}"
            net = ".".join(self.also_on.split(".")[:3]) + ".0/24"
            with open(self.data / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {net} scram-sha-256\n")
        self.port = _free_port()
        log = open(self.dir / "log", "wb")  # noqa: SIM115 (the server writes it until stop)
        self.proc = subprocess.Popen(
            [
                str(BIN / "postgres"),
                "-D",
                str(self.data),
                "-h",
                listen,
                "-p",
                str(self.port),
                "-k",
                str(self.dir),
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ],
            cwd=self.dir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **self._as,
        )
        log.close()
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 30) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited {self.proc.returncode}: {self.log()}")
            try:
                psycopg.connect(self.url("postgres"), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"postgres not ready in {timeout}s: {self.log()}") from None
                time.sleep(0.1)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.dir / "log").read_text(errors="replace")[-2000:]
        return ""

    def url(
        self,
        database: str,
        password: str | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
    ) -> str:
        pw = self.password if password is None else password
        return f"postgresql://{USER}:{pw}@{host}:{port or self.port}/{database}"

    def database(self, host: str = "127.0.0.1") -> str:
        """A new, empty database; its URL (with the password) through `host`."""
        import psycopg

        self._n += 1
        name = f"vb_test_{self._n}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name, host=host)

    def stop(self) -> None:
        """Fast shutdown by pid (SIGINT), SIGKILL if it lingers; then remove everything."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextlib.contextmanager
def running() -> Iterator[PgServer]:
    """A started server, stopped and removed on the way out."""
    server = PgServer()
    try:
        yield server.start()
    finally:
        server.stop()
