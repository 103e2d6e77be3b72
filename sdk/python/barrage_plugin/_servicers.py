"""The gRPC services of the plugin protocol, calling the author's hooks (sdk/server.go in Go)."""

from __future__ import annotations

import datetime
import json
import logging
import queue
import threading
from typing import Any, Callable, Iterator, List, Optional

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from barrage_plugin import _types as t
from barrage_plugin.v1 import plugin_pb2 as pb
from barrage_plugin.v1 import plugin_pb2_grpc as pb_grpc

log = logging.getLogger("barrage_plugin")

_KINDS = {
    t.KIND_SESSION_ELEMENT: pb.KIND_SESSION_ELEMENT,
    t.KIND_URL: pb.KIND_URL,
    t.KIND_SOURCE_MODIFIER: pb.KIND_SOURCE_MODIFIER,
}
_SCOPES = {t.SCOPE_RUN: pb.SCOPE_RUN, t.SCOPE_VU: pb.SCOPE_VU, t.SCOPE_ITERATION: pb.SCOPE_ITERATION}

# The most results one ExchangeResponse carries: the Go client sends at most 256 calls a batch.
_MAX_RESULTS = 256


def describe(p: t.Plugin) -> pb.DescribeResponse:
    return pb.DescribeResponse(
        name=p.name,
        version=p.version,
        description=p.description,
        kinds=[_KINDS[k] for k in p.kinds()],
        protocol_version=t.PROTOCOL_VERSION,
        config_schema=p.schema_text(),
        scope=_SCOPES.get(p.scope, pb.SCOPE_UNSPECIFIED) if p.element is not None else pb.SCOPE_UNSPECIFIED,
        network=list(p.network),
    )


def parse_config(text: str) -> dict:
    """parse_config turns the config JSON from the host into a dict; empty is {}."""
    if not text:
        return {}
    try:
        config = json.loads(text)
    except ValueError as e:
        raise t.ConfigError("", f"not valid JSON: {e}") from None
    if not isinstance(config, dict):
        raise t.ConfigError("", "must be a JSON object")
    return config


def error_text(e: BaseException) -> str:
    """error_text is what the host is told of an exception: its message, with the type's name
    when the type says something (a KeyError's message alone is just the key)."""
    msg = str(e)
    if type(e) in (Exception, RuntimeError) and msg:
        return msg
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def abort(context: grpc.ServicerContext, e: Exception) -> None:
    """abort ends a unary call with the status for e, as the Go SDK's toStatus does: a
    ConfigError is InvalidArgument with a google.rpc.BadRequest naming the field."""
    if isinstance(e, t.ConfigError):
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.BadRequest(
            field_violations=[error_details_pb2.BadRequest.FieldViolation(field=e.field, description=e.reason)],
        ))
        status = status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=str(e), details=[detail])
        context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))
    log.error("hook failed", exc_info=e)
    context.abort(grpc.StatusCode.UNKNOWN, error_text(e))


def headers_to_proto(h: t.Headers) -> List[pb.Header]:
    return [pb.Header(name=n, value=v) for n, v in h]


def headers_from_proto(hs) -> t.Headers:
    return t.Headers((x.name, x.value) for x in hs)


def request_to_proto(r: t.Request) -> pb.HTTPRequest:
    return pb.HTTPRequest(method=r.method, url=r.url, headers=headers_to_proto(r.headers), body=bytes(r.body))


def request_from_proto(r: pb.HTTPRequest) -> t.Request:
    return t.Request(method=r.method, url=r.url, headers=headers_from_proto(r.headers), body=r.body)


def response_from_proto(r: pb.HTTPResponse) -> t.Response:
    return t.Response(
        status=r.status, headers=headers_from_proto(r.headers), body_preview=r.body_preview,
        duration=datetime.timedelta(microseconds=r.duration_us),
    )


class InfoServicer(pb_grpc.InfoServiceServicer):
    def __init__(self, p: t.Plugin):
        self._info = describe(p)

    def Describe(self, request, context):
        return self._info


class SessionElementServicer(pb_grpc.SessionElementServiceServicer):
    def __init__(self, impl: t.SessionElement):
        self._impl = impl

    def Configure(self, request, context):
        try:
            names = self._impl.configure(parse_config(request.config_json))
        except Exception as e:
            abort(context, e)
        return pb.ConfigureResponse(variables=list(names or ()))

    def Next(self, request, context):
        n = request.count
        if n <= 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "count must be positive")
        exhausted = False
        try:
            sets = self._impl.next(n)
        except t.Exhausted as e:
            sets, exhausted = e.last, True
        except Exception as e:
            abort(context, e)
        return pb.NextResponse(sets=[pb.Values(vars=s) for s in list(sets or ())[:n]], exhausted=exhausted)


class SourceModifierServicer(pb_grpc.SourceModifierServiceServicer):
    def __init__(self, impl: t.SourceModifier):
        self._impl = impl

    def Modify(self, request, context):
        try:
            try:
                script = json.loads(request.script_json)
            except ValueError as e:
                raise ValueError(f"the script is not JSON: {e}") from None
            out = self._impl.modify(script, parse_config(request.config_json))
            if isinstance(out, bytes):
                out = out.decode()
            elif not isinstance(out, str):
                out = json.dumps(out)
        except Exception as e:
            abort(context, e)
        return pb.ModifyResponse(script_json=out)


class Workers:
    """Workers are daemon threads that run hook calls: a hook stuck in I/O keeps no thread pool
    waiting at exit once the host is done with the plugin."""

    def __init__(self, n: int):
        self._tasks: "queue.SimpleQueue[tuple]" = queue.SimpleQueue()
        for i in range(max(1, n)):
            threading.Thread(target=self._run, name=f"barrage-hook-{i}", daemon=True).start()

    def submit(self, fn: Callable[..., None], *args: Any) -> None:
        self._tasks.put((fn, args))

    def _run(self) -> None:
        while True:
            fn, args = self._tasks.get()
            fn(*args)


class _ReadDone:
    """The reader's last word on a stream: how many calls it handed out."""

    def __init__(self, calls: int):
        self.calls = calls


_CANCELLED = object()


class URLServicer(pb_grpc.URLServiceServicer):
    """URLServicer runs the URL hook's calls.

    Exchange reads batches of calls on a thread of its own and hands every call to the workers
    at once, so that calls of one batch, and of the batches after it, run side by side (as the
    Go SDK runs each call on a goroutine). Results go back as they are ready: those ready
    together travel in one response, matched to their calls by id, which the protocol allows.
    """

    def __init__(self, impl: t.URLHook, workers: Workers):
        self._impl = impl
        self._workers = workers

    def Configure(self, request, context):
        try:
            self._impl.configure(parse_config(request.config_json))
            pure = getattr(self._impl, "pure_before", None)
            pure_before = bool(pure()) if callable(pure) else False
        except Exception as e:
            abort(context, e)
        return pb.ConfigureResponse(pure_before=pure_before)

    def Exchange(self, request_iterator, context) -> Iterator[pb.ExchangeResponse]:
        out: "queue.SimpleQueue[Any]" = queue.SimpleQueue()
        # Called when the RPC ends however it ends; a cancelled stream must not leave this
        # generator waiting for results that will never be read.
        context.add_callback(lambda: out.put(_CANCELLED))

        def read() -> None:
            calls = 0
            try:
                for batch in request_iterator:
                    for c in batch.calls:
                        calls += 1
                        self._workers.submit(self._answer, c, out)
            except Exception:
                pass  # the host cancelled the stream or is gone: the callback above says so
            out.put(_ReadDone(calls))

        threading.Thread(target=read, name="barrage-exchange-reader", daemon=True).start()
        answered, total = 0, None
        while total is None or answered < total:
            results: List[pb.Result] = []
            item = out.get()
            while True:
                if item is _CANCELLED:
                    return
                if isinstance(item, _ReadDone):
                    total = item.calls
                else:
                    results.append(item)
                if len(results) >= _MAX_RESULTS:
                    break
                try:
                    item = out.get_nowait()
                except queue.Empty:
                    break
            if results:
                answered += len(results)
                yield pb.ExchangeResponse(results=results)

    def _answer(self, c: pb.Call, out: "queue.SimpleQueue[Any]") -> None:
        out.put(self._call(c))

    def _call(self, c: pb.Call) -> pb.Result:
        """_call runs one hook call; an exception fails that call, not the stream."""
        call = t.Call(vu=c.vu, iteration=c.iteration, request=c.request_name)
        try:
            phase = c.WhichOneof("phase")
            if phase == "before":
                req = request_from_proto(c.before)
                self._impl.before(call, req)
                return pb.Result(id=c.id, request=request_to_proto(req))
            if phase == "after":
                req = request_from_proto(c.after.request)
                resp = response_from_proto(c.after.response)
                outcome: Optional[t.Outcome] = self._impl.after(call, req, resp)
                if outcome is None:
                    return pb.Result(id=c.id)
                return pb.Result(id=c.id, vars=outcome.vars, fail=outcome.fail)
            return pb.Result(id=c.id, error="call has neither before nor after")
        except Exception as e:
            return pb.Result(id=c.id, error=error_text(e))
