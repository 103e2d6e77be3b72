"""dial against a real Unix socket that answers CONNECT as the host does, and a real TCP
listener. Run from sdk/python: python -B -m unittest discover -s tests -v"""

import os
import socket
import tempfile
import threading
import unittest

import barrage_plugin as bp


class FakeHost:
    """FakeHost answers one CONNECT per connection: 200 and a relay to the TCP listener when
    the destination is "granted", else 403 with a reason."""

    def __init__(self, test, granted):
        self.granted = granted
        d = tempfile.mkdtemp()
        self.path = os.path.join(d, "dial.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen()
        test.addCleanup(lambda: os.rmdir(d))
        test.addCleanup(lambda: os.unlink(self.path))
        test.addCleanup(self.sock.close)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                head += c.recv(1)
            target = head.split(b" ")[1].decode()
            if target != self.granted:
                body = f"{target} is not granted".encode()
                c.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                c.close()
                continue
            # The destination speaks first: its greeting follows the answer at once.
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\nhello\n")
            c.sendall(c.recv(64).upper())
            c.close()


class DialTest(unittest.TestCase):
    def test_without_a_grant_there_is_no_network(self):
        os.environ.pop(bp.DIAL_SOCKET_ENV, None)
        with self.assertRaises(bp.NoNetwork):
            bp.dial("db.example", 5432)

    def test_dial_reaches_the_granted_host_and_is_refused_others(self):
        host = FakeHost(self, "db.example:5432")
        os.environ[bp.DIAL_SOCKET_ENV] = host.path
        self.addCleanup(lambda: os.environ.pop(bp.DIAL_SOCKET_ENV, None))
        s = bp.dial("db.example", 5432, timeout=5)
        with s:
            f = s.makefile("rb")
            self.assertEqual(f.readline(), b"hello\n")
            s.sendall(b"ping")
            self.assertEqual(f.read(), b"PING")
        with self.assertRaises(bp.DialRefused) as e:
            bp.dial("db.example", 5433, timeout=5)
        self.assertIn("db.example:5433 is not granted", str(e.exception))


if __name__ == "__main__":
    unittest.main()
