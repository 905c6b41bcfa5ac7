"""HTTP/1.1 over a unix socket: the API of LXD and Firecracker (http.client does the HTTP)."""

from __future__ import annotations

import http.client
import socket
from pathlib import Path

SUN_PATH_MAX = 107  # bytes of a socket path, without the terminating NUL


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float, host: str = "localhost") -> None:
        super().__init__(host, timeout=timeout)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(str(self.path))
        except BaseException:
            sock.close()
            raise
        self.sock = sock
