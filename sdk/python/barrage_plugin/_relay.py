"""TLS in front of the gRPC server, done by Python's ssl module rather than by grpcio.

go-plugin's AutoMTLS gives the host a certificate on a P-521 key, and a TLS 1.3 client only
offers a certificate whose signature scheme the server lists in its request. grpcio's
BoringSSL neither lists nor verifies ecdsa_secp521r1_sha512 and has no setting for it, so a
grpcio server that requires the host's certificate never gets one. OpenSSL, behind Python's ssl
module, does both. So the plugin listens where the handshake says with an ssl context that
requires the host's certificate and speaks h2 by ALPN, and relays each authenticated
connection's bytes to the gRPC server, which listens in plain text on a socket in a directory
only the plugin's user can enter.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import tempfile
import threading

from barrage_plugin import _tls

# Bounds the TLS handshake of a connection that never completes it.
HANDSHAKE_TIMEOUT = 10.0


def server_context(cert: _tls.Certificate, client_cert_pem: str) -> ssl.SSLContext:
    """server_context is go-plugin's server TLS config: our certificate, TLS 1.2 or later, and
    the host's certificate required and trusted alone."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.load_verify_locations(cadata=client_cert_pem)
    ctx.set_alpn_protocols(["h2"])  # gRPC clients insist on it
    # load_cert_chain reads files only: write them where no one else can look, for a moment.
    with tempfile.TemporaryDirectory(prefix="barrage-tls-") as d:
        certfile, keyfile = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        for path, data in ((certfile, cert.cert_pem), (keyfile, cert.key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        ctx.load_cert_chain(certfile, keyfile)
    return ctx


class Relay:
    """Relay accepts TLS connections on a Unix socket and pipes each to the gRPC server.

    It binds at once, so the host may connect as soon as it reads the handshake line, and
    serves on an event loop in a daemon thread of its own.
    """

    def __init__(self, path: str, upstream: str, ctx: ssl.SSLContext):
        self._upstream = upstream
        self._ctx = ctx
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(path)
        self._sock.listen(16)
        self._loop = asyncio.new_event_loop()
        self._server = None
        ready = threading.Event()
        threading.Thread(target=self._run, args=(ready,), name="barrage-tls", daemon=True).start()
        ready.wait()

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_unix_server(
                self._pipe, sock=self._sock, ssl=self._ctx, ssl_handshake_timeout=HANDSHAKE_TIMEOUT,
            )

        self._loop.run_until_complete(start())
        ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        """close stops accepting connections; those open go on until the process ends."""
        self._loop.call_soon_threadsafe(self._server.close)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(self._upstream)
        except OSError:
            writer.close()
            return

        async def copy(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(1 << 16):
                    w.write(data)
                    await w.drain()
            except (OSError, ssl.SSLError):
                pass  # one side went away: both are closed below

        tasks = [asyncio.ensure_future(copy(reader, up_writer)), asyncio.ensure_future(copy(up_reader, writer))]
        # HTTP/2 has no use for a half-closed connection: when one direction ends, end both.
        _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in pending:
            t.cancel()
        for w in (writer, up_writer):
            w.close()
