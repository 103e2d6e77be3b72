"""dial reaches a host the run grants the plugin, through the host, as sdk.Dial does in Go.

A sandboxed plugin has no network of its own. When a run grants it hosts (within those its
Plugin.network declares), the host gives it a Unix socket, named by BARRAGE_DIAL_SOCKET, on
which it asks for one TCP connection at a time with HTTP CONNECT; the host checks the
destination against the grants and its own dial policy, connects, and relays the bytes.
"""

from __future__ import annotations

import os
import socket
from typing import Optional

# The environment variable that names the host's dial socket: set only when the run grants
# the plugin hosts.
DIAL_SOCKET_ENV = "BARRAGE_DIAL_SOCKET"

_MAX_ANSWER = 4096


class NoNetwork(OSError):
    """NoNetwork: the run grants this plugin no host."""


class DialRefused(OSError):
    """DialRefused: the host refused the destination (not granted, or its dial policy refuses
    the address). Nothing was sent to it."""


def dial(host: str, port: int, timeout: Optional[float] = None) -> socket.socket:
    """dial returns a connected socket to host:port, through the host's dial socket.

    Use it where a library takes a connected socket or a socket factory; the socket is a Unix
    one whose bytes the host relays to the destination.
    """
    path = os.environ.get(DIAL_SOCKET_ENV, "")
    if not path:
        raise NoNetwork(f"dial {host}:{port}: the run grants this plugin no network (no {DIAL_SOCKET_ENV})")
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if any(c in target for c in " \r\n"):
        raise ValueError(f"dial {target!r}: not host:port")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        s.connect(path)
        s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
        # Read the answer's head byte by byte: what follows it is the destination's.
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            b = s.recv(1)
            if not b:
                raise ConnectionError(f"dial {target}: the host closed the dial socket")
            head += b
            if len(head) > _MAX_ANSWER:
                raise ConnectionError(f"dial {target}: the host's answer is too long")
        status_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/"):
            raise ConnectionError(f"dial {target}: the host's answer {status_line!r} is not HTTP")
        if parts[1] != "200":
            reason = _body(s, head) or status_line
            if parts[1] == "403":
                raise DialRefused(f"dial {target}: the host refused the connection: {reason}")
            raise ConnectionError(f"dial {target}: {reason}")
        s.settimeout(None)
        return s
    except BaseException:
        s.close()
        raise


def _body(s: socket.socket, head: bytes) -> str:
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = min(int(value.strip()), _MAX_ANSWER)
            except ValueError:
                length = 0
    body = b""
    while len(body) < length:
        b = s.recv(length - len(body))
        if not b:
            break
        body += b
    return body.decode("utf-8", "replace").strip()
