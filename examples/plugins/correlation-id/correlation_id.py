"""correlation-id is a URL hook written in Python: it gives every request a fresh correlation id
in a header, and after the response sets the variable correlation_id to it, or, with
require_echo, fails the request when the response does not carry the same id back."""

import barrage_plugin as bp  # first: it keeps stdout for the handshake

import dataclasses
import json
import re
import uuid

NAME = "correlation-id"
VERSION = "1.0.0"
DEFAULT_HEADER = "X-Correlation-ID"
VARIABLE = "correlation_id"
NOT_ECHOED = "correlation id not echoed"

CONFIG_SCHEMA = json.dumps({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "header": {
            "description": "the request header that carries the id",
            "type": "string",
            "pattern": "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
            "default": DEFAULT_HEADER,
        },
        "require_echo": {
            "description": "fail a request whose response does not carry the same header and id",
            "type": "boolean",
            "default": False,
        },
    },
    "additionalProperties": False,
}, indent=2)

# An HTTP header name: a token (RFC 9110, section 5.1).
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


@dataclasses.dataclass(frozen=True)
class Settings:
    header: str = DEFAULT_HEADER
    require_echo: bool = False


def parse(config: dict) -> Settings:
    """parse checks the config object; the host has validated it against CONFIG_SCHEMA, but a
    plugin answers for its own config."""
    for key in config:
        if key not in ("header", "require_echo"):
            raise bp.ConfigError(key, "unknown setting")
    header = config.get("header", DEFAULT_HEADER)
    if not isinstance(header, str) or not _TOKEN.fullmatch(header):
        raise bp.ConfigError("header", "must be an HTTP header name")
    require_echo = config.get("require_echo", False)
    if not isinstance(require_echo, bool):
        raise bp.ConfigError("require_echo", "must be true or false")
    return Settings(header=header, require_echo=require_echo)


class CorrelationID(bp.URLHook):
    def __init__(self):
        self.settings = Settings()

    def configure(self, config):
        # One assignment: calls running on other threads see the old settings or the new.
        self.settings = parse(config)

    def before(self, call, request):
        request.headers.set(self.settings.header, str(uuid.uuid4()))

    def after(self, call, request, response):
        s = self.settings
        sent = request.headers.get(s.header)
        if s.require_echo and (not sent or response.headers.get(s.header) != sent):
            return bp.Outcome(fail=NOT_ECHOED)
        if not sent:
            return None
        return bp.Outcome(vars={VARIABLE: sent})


def plugin():
    return bp.Plugin(
        name=NAME,
        version=VERSION,
        description="Sends a fresh correlation id with every request and checks that it comes back.",
        config_schema=CONFIG_SCHEMA,
        url=CorrelationID(),
    )


def main():
    bp.serve(plugin())
