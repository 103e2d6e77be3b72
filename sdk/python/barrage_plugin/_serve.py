"""serve runs a plugin as a go-plugin gRPC process: what sdk/serve.go and go-plugin's Serve do
for a Go plugin (go-plugin server.go, grpc_server.go, grpc_controller.go)."""

from __future__ import annotations

import grp
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
from concurrent import futures
from typing import Optional

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from barrage_plugin import _relay, _servicers, _stdio, _tls
from barrage_plugin import _types as t
from barrage_plugin.v1 import plugin_pb2_grpc as pb_grpc

log = logging.getLogger("barrage_plugin")

# go-plugin's CoreProtocolVersion: the handshake line's first field.
CORE_PROTOCOL_VERSION = 1

# The service go-plugin's client asks the health service about (GRPCServiceName).
HEALTH_SERVICE = "plugin"

# How long in-flight calls may finish after SIGTERM or SIGINT. go-plugin's Kill waits 2 s for
# the process to exit before it kills it.
SIGNAL_GRACE = 1.5


def serve(plugin: t.Plugin, *, workers: int = 8) -> None:
    """serve runs plugin as a plugin process and returns when the host is done with it. Call it
    from the plugin's main.

    It refuses to run unless a host started it, speaks gRPC only, negotiates the protocol
    version, serves TLS with go-plugin's AutoMTLS when the host asks for it (PLUGIN_CLIENT_CERT),
    and keeps stdout for the handshake: whatever
    the plugin prints goes to stderr, which the host logs. The host ends it with go-plugin's
    GRPCController.Shutdown, or with SIGTERM or SIGINT, after which in-flight calls get a moment
    to finish. workers is how many hook calls run at once.
    """
    try:
        plugin.validate()
    except ValueError as e:
        print(e, file=sys.stderr)
        sys.exit(2)
    if not _stdio.started_by_host():
        print(
            f"{plugin.name} {plugin.version} is a Barrage plugin: Barrage starts it "
            "(barrage run, barrage plugin check); it is not run by hand",
            file=sys.stderr,
        )
        sys.exit(1)
    _stdio.keep_stdout()
    _stdio.setup_logging()
    try:
        s = _Server(plugin, workers)
    except Exception:
        log.exception("plugin init error")
        sys.exit(1)
    s.run()


class _Server:
    def __init__(self, plugin: t.Plugin, workers: int):
        self._stopping = threading.Event()
        self._grace: Optional[float] = None
        version = negotiate(os.environ.get("PLUGIN_PROTOCOL_VERSIONS", ""))

        cert, client_cert = None, os.environ.get("PLUGIN_CLIENT_CERT", "")
        if client_cert:
            try:
                _tls.check_client_cert(client_cert)
            except ValueError as e:
                raise ValueError(f"PLUGIN_CLIENT_CERT holds no certificate: {e}") from None
            cert = _tls.generate_cert()

        # go-plugin's client lifts gRPC's 4 MiB limit on what it sends: a batch of calls with
        # request bodies, or a large script, must not fail here either.
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="barrage-grpc"),
            options=[("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)],
        )
        self._health = health.HealthServicer()
        self._health.set(HEALTH_SERVICE, health_pb2.HealthCheckResponse.SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        self._server.add_generic_rpc_handlers((self._controller(),))
        register(self._server, plugin, _servicers.Workers(workers))

        self._listener = Listener(self._server, cert, client_cert)
        self._server.start()
        self._line = (
            f"{CORE_PROTOCOL_VERSION}|{version}|unix|{self._listener.path}|grpc|"
            f"{cert.handshake_field() if cert else ''}"
        )
        if os.environ.get("PLUGIN_MULTIPLEX_GRPC"):
            # The host asks whether the gRPC broker is multiplexed; there is no broker here.
            self._line += "|false"

    def run(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                signal.signal(sig, lambda *_: self._stop(SIGNAL_GRACE))
            except ValueError:
                pass  # not the main thread: the host's Shutdown still ends the plugin
        _stdio.write_handshake(self._line)
        self._stopping.wait()
        self._health.enter_graceful_shutdown()
        self._listener.close()
        self._server.stop(self._grace).wait()
        self._listener.remove()

    def _stop(self, grace: Optional[float]) -> None:
        if not self._stopping.is_set():
            self._grace = grace
            self._stopping.set()

    def _controller(self) -> grpc.GenericRpcHandler:
        """_controller serves go-plugin's GRPCController: the host's Client.Kill calls Shutdown,
        then waits for the process to exit. Like go-plugin, the server stops at once, after the
        answer has gone. plugin.Empty has no fields, so it is the empty byte string on the wire."""

        def shutdown(request, context):
            context.add_callback(lambda: self._stop(None))
            return b""

        return grpc.method_handlers_generic_handler("plugin.GRPCController", {
            "Shutdown": grpc.unary_unary_rpc_method_handler(
                shutdown, request_deserializer=lambda b: b, response_serializer=lambda b: b,
            ),
        })


def register(server: grpc.Server, plugin: t.Plugin, workers: _servicers.Workers) -> None:
    """register adds the services plugin implements to server."""
    pb_grpc.add_InfoServiceServicer_to_server(_servicers.InfoServicer(plugin), server)
    if plugin.element is not None:
        pb_grpc.add_SessionElementServiceServicer_to_server(_servicers.SessionElementServicer(plugin.element), server)
    if plugin.url is not None:
        pb_grpc.add_URLServiceServicer_to_server(_servicers.URLServicer(plugin.url, workers), server)
    if plugin.source is not None:
        pb_grpc.add_SourceModifierServiceServicer_to_server(_servicers.SourceModifierServicer(plugin.source), server)


def negotiate(offered: str) -> int:
    """negotiate picks the protocol version from the host's PLUGIN_PROTOCOL_VERSIONS. There is
    one to pick; a host that does not offer it is told so by the handshake line, as go-plugin
    does, and names the mismatch itself."""
    versions = []
    for s in filter(None, offered.split(",")):
        try:
            versions.append(int(s))
        except ValueError:
            log.warning("the host sent an invalid plugin protocol version", extra={"version": s})
    if versions and t.PROTOCOL_VERSION not in versions:
        log.error(
            "the host speaks plugin protocol %s; this plugin speaks %d",
            ",".join(map(str, versions)), t.PROTOCOL_VERSION,
        )
    return t.PROTOCOL_VERSION


class Listener:
    """Listener is where the host connects: a Unix socket in PLUGIN_UNIX_SOCKET_DIR (else the
    temporary directory), as go-plugin's Go server makes on every system but Windows.

    With AutoMTLS the socket is the TLS relay's (see _relay) and the gRPC server listens on a
    socket of its own in a private directory; without, the gRPC server listens there itself.
    """

    def __init__(self, server: grpc.Server, cert: Optional[_tls.Certificate], client_cert_pem: str):
        if not hasattr(socket, "AF_UNIX"):
            raise OSError("this system has no Unix sockets; Python plugins need them")
        folder = os.environ.get("PLUGIN_UNIX_SOCKET_DIR") or None
        fd, self.path = tempfile.mkstemp(prefix="plugin", dir=folder)
        os.close(fd)
        os.unlink(self.path)  # the socket's path must not exist
        self._private: Optional[str] = None
        self._relay: Optional[_relay.Relay] = None
        if cert is None:
            server.add_insecure_port("unix:" + self.path)
        else:
            self._private = tempfile.mkdtemp(prefix="barrage-grpc-", dir=folder)  # mode 0700
            upstream = os.path.join(self._private, "grpc.sock")
            server.add_insecure_port("unix:" + upstream)
            self._relay = _relay.Relay(self.path, upstream, _relay.server_context(cert, client_cert_pem))
        share_socket(self.path, os.environ.get("PLUGIN_UNIX_SOCKET_GROUP", ""))

    def close(self) -> None:
        """close stops new connections through the relay."""
        if self._relay is not None:
            self._relay.close()

    def remove(self) -> None:
        """remove deletes the sockets once the server has stopped."""
        for path in (self.path, self._private and os.path.join(self._private, "grpc.sock"), self._private):
            if not path:
                continue
            try:
                os.rmdir(path) if os.path.isdir(path) else os.unlink(path)
            except OSError:
                pass


def share_socket(path: str, group: str) -> None:
    """share_socket lets the host's group use the socket, as go-plugin does when the host sets
    PLUGIN_UNIX_SOCKET_GROUP (a plugin running as another user than the host)."""
    if not group:
        return
    gid = int(group) if group.isdigit() else grp.getgrnam(group).gr_gid
    os.chown(path, -1, gid)
    os.chmod(path, 0o660)
