"""Standard output kept for the handshake, and logs the host understands.

go-plugin reads the plugin's first line of stdout as the handshake, so nothing else may reach
it: not a print in the author's module, not a C library writing to file descriptor 1. When a
host starts the plugin, importing barrage_plugin keeps a duplicate of the real stdout for the
handshake alone and points descriptor 1 and sys.stdout at stderr, which the host logs.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
from typing import Optional

COOKIE_KEY = "BARRAGE_PLUGIN"
COOKIE_VALUE = "7d1c0f3e-barrage-plugin"

_handshake_fd: Optional[int] = None


def started_by_host() -> bool:
    return os.environ.get(COOKIE_KEY) == COOKIE_VALUE


def keep_stdout() -> None:
    """keep_stdout takes the real stdout for the handshake and sends all else to stderr.

    It does nothing when the plugin is not started by a host (a test, a curious user), or a
    second time.
    """
    global _handshake_fd
    if _handshake_fd is not None or not started_by_host():
        return
    try:
        fd = os.dup(1)  # not inherited by children: only the handshake writes to it
    except OSError:
        return  # no stdout at all: serve reports it
    os.dup2(2, 1)
    # Whatever the old sys.stdout still buffers goes to descriptor 1, which is stderr now.
    old, sys.stdout = sys.stdout, sys.stderr
    try:
        if old is not None:
            old.flush()
    except (OSError, ValueError):
        pass
    _handshake_fd = fd


def write_handshake(line: str) -> None:
    """write_handshake writes the handshake line to the real stdout and closes it: the host
    reads nothing else from there."""
    global _handshake_fd
    keep_stdout()
    if _handshake_fd is None:
        raise OSError("stdout is not open for the handshake")
    data = (line + "\n").encode("ascii")
    fd, _handshake_fd = _handshake_fd, -1
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


# hclog's level names, which go-plugin maps back onto the host's logger.
_LEVELS = {logging.DEBUG: "debug", logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error", logging.CRITICAL: "error"}

# The attributes every LogRecord has; the others came through `extra=` and become fields.
_RECORD_ATTRS = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}


class HCLogFormatter(logging.Formatter):
    """HCLogFormatter writes a record as hclog's JSON line, which go-plugin parses from the
    plugin's stderr: the host logs it at its level, with `extra=` fields as key-value pairs."""

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
        entry = {
            "@level": _LEVELS.get(record.levelno, "info" if record.levelno < logging.ERROR else "error"),
            "@message": record.getMessage(),
            "@module": record.name,
            "@timestamp": ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        for k, v in vars(record).items():
            if k not in _RECORD_ATTRS and not k.startswith("_"):
                entry[k] = v
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def setup_logging() -> None:
    """setup_logging sends the logging module's records to stderr as hclog JSON, unless the
    author set up logging already."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(HCLogFormatter())
    root.addHandler(handler)
    root.setLevel(logging.INFO)
