"""barrage_plugin writes Barrage plugins in Python, as package sdk does in Go.

A plugin describes itself and its hooks in a Plugin and hands it to serve from its main:

    import barrage_plugin as bp  # first: see below

    class Stamp(bp.URLHook):
        def before(self, call, request):
            request.headers.set("X-Stamp", str(call.vu))

    def main():
        bp.serve(bp.Plugin(name="stamp", version="1.0.0", url=Stamp()))

Importing this package first matters: when a host starts the plugin, the import keeps the real
stdout for go-plugin's handshake and sends everything printed, by Python or by C code, to stderr,
which the host logs. See sdk/python/README.md.
"""

from barrage_plugin import _stdio

_stdio.keep_stdout()

from barrage_plugin._net import DIAL_SOCKET_ENV, DialRefused, NoNetwork, dial  # noqa: E402
from barrage_plugin._serve import serve  # noqa: E402
from barrage_plugin._stdio import COOKIE_KEY, COOKIE_VALUE  # noqa: E402
from barrage_plugin._types import (  # noqa: E402
    KIND_SESSION_ELEMENT,
    KIND_SOURCE_MODIFIER,
    KIND_URL,
    PROTOCOL_VERSION,
    SCOPE_ITERATION,
    SCOPE_RUN,
    SCOPE_VU,
    Call,
    ConfigError,
    Exhausted,
    Headers,
    Outcome,
    Plugin,
    Request,
    Response,
    SessionElement,
    SourceModifier,
    URLHook,
)

__all__ = [
    "COOKIE_KEY",
    "COOKIE_VALUE",
    "DIAL_SOCKET_ENV",
    "KIND_SESSION_ELEMENT",
    "KIND_SOURCE_MODIFIER",
    "KIND_URL",
    "PROTOCOL_VERSION",
    "SCOPE_ITERATION",
    "SCOPE_RUN",
    "SCOPE_VU",
    "Call",
    "ConfigError",
    "DialRefused",
    "Exhausted",
    "Headers",
    "NoNetwork",
    "Outcome",
    "Plugin",
    "Request",
    "Response",
    "SessionElement",
    "SourceModifier",
    "URLHook",
    "dial",
    "serve",
]
