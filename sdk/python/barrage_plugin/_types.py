"""What a plugin is written with: the hooks' base classes and the values they exchange.

They mirror the Go SDK (sdk/sdk.go): a Plugin names its hooks; URLHook, SessionElement and
SourceModifier are the Go interfaces of the same names, with the config given as the parsed JSON
object rather than bytes. Any object with the same methods will do; the base classes only supply
the defaults.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any, Iterable, Iterator, Mapping, Optional, Sequence, Tuple, Union

# ProtocolVersion of the Go SDK: the plugin protocol (sdk/proto/barrage/plugin/v1) this SDK
# speaks, negotiated in go-plugin's handshake.
PROTOCOL_VERSION = 1

# The kinds of hook, as Info.Kinds names them in the Go SDK.
KIND_SESSION_ELEMENT = "session-element"
KIND_URL = "url"
KIND_SOURCE_MODIFIER = "source-modifier"

# The scopes of a session element: how often its values change.
SCOPE_RUN = "run"  # one set of values for the whole run
SCOPE_VU = "vu"  # a set per virtual user, kept for all its iterations
SCOPE_ITERATION = "iteration"  # a fresh set every iteration
SCOPES = (SCOPE_RUN, SCOPE_VU, SCOPE_ITERATION)


class ConfigError(Exception):
    """ConfigError says what is wrong with the plugin's config.

    Raise it from configure (or modify) so that the script's author sees the field and the
    reason: the host receives it as the Go SDK's *sdk.ConfigError (gRPC InvalidArgument with a
    google.rpc.BadRequest field violation).
    """

    def __init__(self, field: str, reason: str):
        super().__init__(field, reason)
        # field is a JSON path into the config object, such as "email.domain"; "" for the whole.
        self.field = field
        self.reason = reason

    def __str__(self) -> str:
        if not self.field:
            return "config: " + self.reason
        return f"config.{self.field}: {self.reason}"


class Exhausted(Exception):
    """Exhausted is raised by SessionElement.next when no more values will come.

    It carries the last sets of values, if any, like the Go SDK's (sets, ErrExhausted).
    """

    def __init__(self, last: Sequence[Mapping[str, str]] = ()):
        super().__init__("no more values")
        self.last = list(last)


class Headers:
    """Headers are HTTP header fields in their order; names match whatever their case.

    A name may appear more than once. get gives the first value, get_all every one, set replaces
    them all, add appends one.
    """

    __slots__ = ("_fields",)

    def __init__(self, fields: Union[Mapping[str, str], Iterable[Tuple[str, str]], None] = None):
        items = fields.items() if isinstance(fields, Mapping) else (fields or ())
        self._fields = [(str(n), str(v)) for n, v in items]

    def get(self, name: str, default: Optional[str] = None) -> Optional[str]:
        key = name.lower()
        for n, v in self._fields:
            if n.lower() == key:
                return v
        return default

    def get_all(self, name: str) -> list:
        key = name.lower()
        return [v for n, v in self._fields if n.lower() == key]

    def set(self, name: str, value: str) -> None:
        self.remove(name)
        self._fields.append((name, str(value)))

    def add(self, name: str, value: str) -> None:
        self._fields.append((name, str(value)))

    def remove(self, name: str) -> None:
        key = name.lower()
        self._fields = [(n, v) for n, v in self._fields if n.lower() != key]

    def items(self) -> list:
        """items is every (name, value) pair, in order."""
        return list(self._fields)

    def __getitem__(self, name: str) -> str:
        v = self.get(name)
        if v is None:
            raise KeyError(name)
        return v

    def __setitem__(self, name: str, value: str) -> None:
        self.set(name, value)

    def __delitem__(self, name: str) -> None:
        self.remove(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __iter__(self) -> Iterator[Tuple[str, str]]:
        return iter(list(self._fields))

    def __len__(self) -> int:
        return len(self._fields)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Headers) and self._fields == other._fields

    def __repr__(self) -> str:
        return f"Headers({self._fields!r})"


@dataclasses.dataclass(frozen=True)
class Call:
    """Call says which request a URL hook runs for."""

    vu: int  # the virtual user, from 1
    iteration: int  # the virtual user's iteration, from 1
    request: str  # the request's name in the script


@dataclasses.dataclass
class Request:
    """Request is an HTTP request as a URL hook sees it; before may change it in place."""

    method: str = "GET"
    url: str = ""
    headers: Headers = dataclasses.field(default_factory=Headers)
    body: bytes = b""


@dataclasses.dataclass
class Response:
    """Response is what a URL hook sees of a response."""

    status: int = 0
    headers: Headers = dataclasses.field(default_factory=Headers)
    # The first bytes of the body, up to the host's preview size.
    body_preview: bytes = b""
    # From sending the request to the end of the response.
    duration: datetime.timedelta = datetime.timedelta(0)


@dataclasses.dataclass
class Outcome:
    """Outcome is what a URL hook decides after a response."""

    # Variables set for the virtual user, as extractors do. Names and values are strings.
    vars: dict = dataclasses.field(default_factory=dict)
    # When not empty, fails the request with this reason.
    fail: str = ""


class URLHook:
    """URLHook runs around each request it is attached to (the Go SDK's sdk.URLHook).

    Calls from many virtual users arrive together and run on several threads at once: keep
    before and after free of unguarded shared state.
    """

    def configure(self, config: dict) -> None:
        """configure receives the config object from the script, already valid against the
        plugin's config schema. Raise ConfigError to refuse it."""

    def before(self, call: Call, request: Request) -> None:
        """before may change the request in place before it is sent. An exception fails the
        request."""

    def after(self, call: Call, request: Request, response: Response) -> Optional[Outcome]:
        """after reads the response. It may set variables and fail the request with a reason
        (Outcome.fail). An exception fails the request too, as a fault of the plugin."""
        return None

    def pure_before(self) -> bool:
        """pure_before says whether before, as configured, changes a request by what the request
        holds alone (its method, URL, headers and body): not by the call, the time, a counter,
        randomness or anything the hook keeps. The host asks once, after configure; when it is
        True the host keeps before's changes to a request and makes them itself to an identical
        request, with no call (the Go SDK's sdk.PureBefore). A hook that adds a timestamp, a
        nonce or a counter is not pure."""
        return False


class SessionElement:
    """SessionElement produces variables for the session (the Go SDK's sdk.SessionElement).

    The host calls configure once, then next as often as it needs values: it asks ahead of the
    virtual users, so one call serves many iterations.
    """

    def configure(self, config: dict) -> Sequence[str]:
        """configure receives the config object and returns the names of the variables the
        element produces."""
        raise NotImplementedError

    def next(self, n: int) -> Sequence[Mapping[str, str]]:
        """next returns up to n sets of values; fewer is fine. When no more will come it raises
        Exhausted with the last sets, if any."""
        raise NotImplementedError


class SourceModifier:
    """SourceModifier rewrites a script when it is prepared (the Go SDK's sdk.SourceModifier).

    modify receives the script as a parsed JSON document in the script format and returns the
    new one, as a JSON-serialisable object or as JSON text. The host validates the result.
    """

    def modify(self, script: Any, config: dict) -> Any:
        return script


@dataclasses.dataclass
class Plugin:
    """Plugin is a plugin to serve: its description and the hooks it implements.

    At least one hook must be set; scope is required with element.
    """

    name: str
    version: str
    description: str = ""
    # A JSON Schema (2020-12) for the config object, as JSON text or as a dict. The host
    # validates a script's config against it before configure. Empty accepts any object.
    config_schema: Union[str, Mapping[str, Any]] = ""
    scope: str = ""
    # The hosts the plugin needs to reach over TCP, as host:port patterns ("db.example:5432",
    # "*.example.com:443", "*:5432"; docs/plugins.md, "Network"). A run may grant it hosts
    # within these, which it reaches with barrage_plugin.dial. Empty: it needs, and has, none.
    network: Sequence[str] = ()
    element: Optional[SessionElement] = None
    url: Optional[URLHook] = None
    source: Optional[SourceModifier] = None

    def kinds(self) -> list:
        out = []
        if self.element is not None:
            out.append(KIND_SESSION_ELEMENT)
        if self.url is not None:
            out.append(KIND_URL)
        if self.source is not None:
            out.append(KIND_SOURCE_MODIFIER)
        return out

    def schema_text(self) -> str:
        if isinstance(self.config_schema, str):
            return self.config_schema
        return json.dumps(self.config_schema, separators=(",", ":"))

    def validate(self) -> None:
        """validate raises ValueError when the plugin cannot be served."""
        if not self.name:
            raise ValueError("barrage_plugin: Plugin.name is empty")
        if not self.version:
            raise ValueError("barrage_plugin: Plugin.version is empty")
        if not self.kinds():
            raise ValueError("barrage_plugin: the plugin implements no hook: set element, url or source")
        if self.element is not None and self.scope not in SCOPES:
            raise ValueError(f"barrage_plugin: Plugin.scope {self.scope!r}: want run, vu or iteration")
        if isinstance(self.network, str) or not all(isinstance(n, str) for n in self.network):
            raise ValueError("barrage_plugin: Plugin.network must be a list of host:port strings")
        for i, n in enumerate(self.network):
            host, sep, port = n.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or port[0] == "0":
                raise ValueError(f"barrage_plugin: Plugin.network[{i}] {n!r}: want host:port, as db.example:5432")
        if self.schema_text():
            try:
                json.loads(self.schema_text())
            except ValueError as e:
                raise ValueError(f"barrage_plugin: Plugin.config_schema is not JSON: {e}") from None
