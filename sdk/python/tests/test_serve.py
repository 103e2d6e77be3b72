"""serve in a real process, spoken to as go-plugin's client does: the environment it sets, the
handshake line, AutoMTLS, the health service, Shutdown and signals. Run from sdk/python:
python -B -m unittest discover -s tests -v"""

import base64
import os
import pathlib
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import unittest

import grpc
from cryptography import x509
from grpc_health.v1 import health_pb2, health_pb2_grpc

import barrage_plugin as bp
from barrage_plugin import _tls
from barrage_plugin.v1 import plugin_pb2 as pb
from barrage_plugin.v1 import plugin_pb2_grpc as pb_grpc

SDK = pathlib.Path(__file__).resolve().parent.parent

# A plugin that prints from Python and from file descriptor 1 before it serves and while it does.
PLUGIN = """
import os, sys
import barrage_plugin as bp
print("noise from print")
os.write(1, b"noise from fd 1\\n")

class Hook(bp.URLHook):
    def before(self, call, request):
        print("noise from a hook")

bp.serve(bp.Plugin(name="noisy", version="0.0.1", url=Hook()))
"""

HANDSHAKE = re.compile(r"^1\|1\|unix\|(?P<path>/[^|]+)\|grpc\|(?P<cert>[A-Za-z0-9+/]*)$")


class Host:
    """Host starts PLUGIN as go-plugin's client does, with AutoMTLS and no other environment."""

    def __init__(self, test, env=None, handshake=True, mtls=True):
        self.dir = tempfile.mkdtemp()
        test.addCleanup(lambda: shutil.rmtree(self.dir))
        self.client = _tls.generate_cert()
        self.mtls = mtls
        base = {
            "PYTHONPATH": str(SDK),
            "PYTHONDONTWRITEBYTECODE": "1",
            bp.COOKIE_KEY: bp.COOKIE_VALUE,
            "PLUGIN_PROTOCOL_VERSIONS": "1",
            "PLUGIN_MIN_PORT": "0",
            "PLUGIN_MAX_PORT": "0",
            "PLUGIN_CLIENT_CERT": self.client.cert_pem.decode() if mtls else None,
            "PLUGIN_UNIX_SOCKET_DIR": self.dir,
        }
        base.update(env or {})
        env = {k: v for k, v in base.items() if v is not None}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PLUGIN], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        test.addCleanup(self.close)
        if handshake:
            self.line = self.proc.stdout.readline().decode().rstrip("\n")
            m = HANDSHAKE.match(self.line)
            if m is None:
                self.proc.kill()
                test.fail(f"handshake line {self.line!r}; stderr: {self.proc.communicate()[1].decode()}")
            self.path = m["path"]
            test.assertEqual(bool(m["cert"]), mtls)
            if mtls:
                self.server_der = base64.b64decode(m["cert"] + "=" * (-len(m["cert"]) % 4))

    def channel(self):
        """channel is a plain-text gRPC channel: grpcio cannot do go-plugin's AutoMTLS (see
        _relay), so the RPCs are tested without it, and the Go test drives them with it."""
        return grpc.insecure_channel("unix:" + self.path)

    def tls(self, with_client_cert=True):
        """tls makes a TLS connection as go-plugin's client does and returns the socket."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(cadata=ssl.DER_cert_to_PEM_cert(self.server_der))
        ctx.set_alpn_protocols(["h2"])
        if with_client_cert:
            d = tempfile.mkdtemp()
            try:
                for name, data in (("c", self.client.cert_pem), ("k", self.client.key_pem)):
                    pathlib.Path(d, name).write_bytes(data)
                ctx.load_cert_chain(os.path.join(d, "c"), os.path.join(d, "k"))
            finally:
                shutil.rmtree(d)
        raw = socket.socket(socket.AF_UNIX)
        raw.settimeout(5)
        raw.connect(self.path)
        return ctx.wrap_socket(raw, server_hostname="localhost")

    def wait(self):
        """wait returns the exit status, the rest of stdout and stderr."""
        out, err = self.proc.communicate(timeout=10)
        return self.proc.returncode, out.decode(), err.decode()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


class ServeTest(unittest.TestCase):
    def test_handshake_health_calls_and_shutdown(self):
        host = Host(self, mtls=False)
        with host.channel() as ch:
            health = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service="plugin"), timeout=5)
            self.assertEqual(health.status, health_pb2.HealthCheckResponse.SERVING)
            info = pb_grpc.InfoServiceStub(ch).Describe(pb.DescribeRequest(), timeout=5)
            self.assertEqual((info.name, info.version, list(info.kinds)), ("noisy", "0.0.1", [pb.KIND_URL]))
            results = list(pb_grpc.URLServiceStub(ch).Exchange(
                iter([pb.ExchangeRequest(calls=[pb.Call(id=9, before=pb.HTTPRequest(url="/"))])]), timeout=5))
            self.assertEqual(results[0].results[0].id, 9)
            shutdown = ch.unary_unary(
                "/plugin.GRPCController/Shutdown", request_serializer=lambda _: b"", response_deserializer=lambda b: b)
            shutdown(None, timeout=5)
        code, out, err = host.wait()
        self.assertEqual(code, 0, err)
        self.assertEqual(out, "", "stdout carries the handshake line and nothing else")
        for noise in ("noise from print", "noise from fd 1", "noise from a hook"):
            self.assertIn(noise, err)
        self.assertFalse(os.path.exists(host.path), "the socket is left behind")

    def test_mtls_as_go_plugin_does_it(self):
        host = Host(self)
        cert = x509.load_der_x509_certificate(host.server_der)
        self.assertEqual(cert.subject.rfc4514_string(), "CN=localhost,O=HashiCorp")
        self.assertEqual(cert.public_key().curve.name, "secp521r1")
        with host.tls() as conn:
            self.assertEqual(conn.getpeercert(binary_form=True), host.server_der)
            self.assertEqual(conn.selected_alpn_protocol(), "h2")
            self.assertEqual(conn.version(), "TLSv1.3")
            # Past TLS, gRPC answers: an HTTP/2 server opens with a SETTINGS frame (type 4).
            conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
            frame = conn.recv(9)
            self.assertEqual(frame[3], 4)
        # Without the host's certificate the server refuses the connection.
        with self.assertRaises((ssl.SSLError, ConnectionError)):
            with host.tls(with_client_cert=False) as conn:
                conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
                if not conn.recv(9):
                    raise ConnectionError("closed")
        host.proc.send_signal(signal.SIGTERM)
        code, _, err = host.wait()
        self.assertEqual(code, 0, err)
        self.assertEqual(os.listdir(host.dir), [], "sockets are left behind")

    def test_sigterm_and_sigint_end_it_cleanly(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig.name):
                host = Host(self)
                host.proc.send_signal(sig)
                code, _, err = host.wait()
                self.assertEqual(code, 0, err)
                self.assertNotIn("Traceback", err)

    def test_refuses_to_run_without_the_cookie(self):
        host = Host(self, env={bp.COOKIE_KEY: None}, handshake=False)
        code, out, err = host.wait()
        self.assertEqual(code, 1)
        self.assertIn("noise from print", out, "stdout is left alone when run by hand")
        self.assertIn("noise from fd 1", out)
        self.assertIn("noisy 0.0.1 is a Barrage plugin", err)

    def test_the_host_group_may_use_the_socket(self):
        for mtls in (True, False):
            with self.subTest(mtls=mtls):
                host = Host(self, env={"PLUGIN_UNIX_SOCKET_GROUP": str(os.getgid())}, mtls=mtls)
                st = os.stat(host.path)
                self.assertEqual((st.st_gid, st.st_mode & 0o777), (os.getgid(), 0o660))


if __name__ == "__main__":
    unittest.main()
