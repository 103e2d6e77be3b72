"""The SDK's services over a real gRPC connection, in this process (as the Go SDK's tests use
plugin.TestPluginGRPCConn). Run from sdk/python: python -B -m unittest discover -s tests -v"""

import json
import logging
import os
import tempfile
import threading
import time
import unittest

import grpc
from google.rpc import error_details_pb2, status_pb2

import barrage_plugin as bp
from barrage_plugin import _serve, _servicers, _stdio
from barrage_plugin.v1 import plugin_pb2 as pb
from barrage_plugin.v1 import plugin_pb2_grpc as pb_grpc


# A before call on /block waits for unblock, having set blocked.
blocked, unblock = threading.Event(), threading.Event()


class Hook(bp.URLHook):
    def configure(self, config):
        if config.get("bad"):
            raise bp.ConfigError("bad.field", "is bad")
        if config.get("boom"):
            raise KeyError("boom")
        self.pure = bool(config.get("pure"))

    def pure_before(self):
        return self.pure

    def before(self, call, request):
        if request.url == "/raise":
            raise ValueError("no such page")
        if request.url == "/slow":
            time.sleep(0.3)
        if request.url == "/block":
            blocked.set()
            unblock.wait(10)
        request.headers.set("X-VU", str(call.vu))
        request.url += "?seen"

    def after(self, call, request, response):
        if response.status >= 500:
            return bp.Outcome(fail=f"status {response.status}")
        return bp.Outcome(vars={"took_us": str(response.duration.microseconds), "req": call.request})


class Element(bp.SessionElement):
    def __init__(self):
        self.left = 3

    def configure(self, config):
        return ["n"]

    def next(self, n):
        k = min(n, self.left)
        self.left -= k
        sets = [{"n": str(i)} for i in range(k)]
        if self.left == 0:
            raise bp.Exhausted(sets)
        return sets


class Source(bp.SourceModifier):
    def modify(self, script, config):
        script["name"] = config.get("name", "renamed")
        return script


def plugin():
    return bp.Plugin(
        name="t", version="0.1.0", description="test", config_schema={"type": "object"},
        scope=bp.SCOPE_VU, element=Element(), url=Hook(), source=Source(), network=["db.example:5432"],
    )


def start(test, register):
    """start serves what register adds on a Unix socket until test ends; it returns a channel."""
    server = grpc.server(_serve.futures.ThreadPoolExecutor(max_workers=4))
    register(server)
    d = tempfile.mkdtemp()
    path = os.path.join(d, "s")
    server.add_insecure_port("unix:" + path)
    server.start()
    channel = grpc.insecure_channel("unix:" + path)
    test.addCleanup(lambda: os.rmdir(d))
    test.addCleanup(lambda: server.stop(None).wait())
    test.addCleanup(channel.close)
    return channel


class ServicersTest(unittest.TestCase):
    def setUp(self):
        self.channel = start(self, lambda s: _serve.register(s, plugin(), _servicers.Workers(4)))

    def test_describe(self):
        d = pb_grpc.InfoServiceStub(self.channel).Describe(pb.DescribeRequest())
        self.assertEqual((d.name, d.version, d.description, d.protocol_version), ("t", "0.1.0", "test", 1))
        self.assertEqual(list(d.kinds), [pb.KIND_SESSION_ELEMENT, pb.KIND_URL, pb.KIND_SOURCE_MODIFIER])
        self.assertEqual(d.scope, pb.SCOPE_VU)
        self.assertEqual(d.config_schema, '{"type":"object"}')
        self.assertEqual(list(d.network), ["db.example:5432"])

    def test_config_error_is_invalid_argument_with_the_field(self):
        with self.assertRaises(grpc.RpcError) as cm:
            pb_grpc.URLServiceStub(self.channel).Configure(pb.ConfigureRequest(config_json='{"bad": true}'))
        e = cm.exception
        self.assertEqual(e.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(e.details(), "config.bad.field: is bad")
        raw = dict(e.trailing_metadata())["grpc-status-details-bin"]
        status = status_pb2.Status.FromString(raw)
        br = error_details_pb2.BadRequest()
        self.assertTrue(status.details[0].Unpack(br))
        self.assertEqual((br.field_violations[0].field, br.field_violations[0].description), ("bad.field", "is bad"))

    def test_a_hook_says_whether_its_before_is_pure(self):
        stub = pb_grpc.URLServiceStub(self.channel)
        self.assertFalse(stub.Configure(pb.ConfigureRequest(config_json="{}")).pure_before)
        self.assertTrue(stub.Configure(pb.ConfigureRequest(config_json='{"pure": true}')).pure_before)

    def test_config_that_is_not_json_is_a_config_error(self):
        with self.assertRaises(grpc.RpcError) as cm:
            pb_grpc.URLServiceStub(self.channel).Configure(pb.ConfigureRequest(config_json="[1]"))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_other_exceptions_are_unknown(self):
        with self.assertLogs("barrage_plugin", "ERROR"):
            with self.assertRaises(grpc.RpcError) as cm:
                pb_grpc.URLServiceStub(self.channel).Configure(pb.ConfigureRequest(config_json='{"boom": true}'))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNKNOWN)
        self.assertEqual(cm.exception.details(), "KeyError: 'boom'")

    def test_exchange_answers_every_call_by_id(self):
        def batches():
            yield pb.ExchangeRequest(calls=[
                pb.Call(id=1, vu=7, iteration=1, request_name="a", before=pb.HTTPRequest(method="GET", url="/slow")),
                pb.Call(id=2, vu=8, iteration=1, request_name="b", before=pb.HTTPRequest(
                    method="POST", url="/x", body=b"{}", headers=[pb.Header(name="A", value="1"), pb.Header(name="a", value="2")])),
            ])
            yield pb.ExchangeRequest(calls=[
                pb.Call(id=3, request_name="c", before=pb.HTTPRequest(url="/raise")),
                pb.Call(id=4, request_name="d", after=pb.Completed(
                    request=pb.HTTPRequest(url="/"), response=pb.HTTPResponse(status=200, duration_us=1500))),
                pb.Call(id=5, after=pb.Completed(response=pb.HTTPResponse(status=503))),
                pb.Call(id=6),
            ])

        results = {}
        for resp in pb_grpc.URLServiceStub(self.channel).Exchange(batches()):
            for r in resp.results:
                self.assertNotIn(r.id, results)
                results[r.id] = r
        self.assertEqual(sorted(results), [1, 2, 3, 4, 5, 6])
        self.assertEqual(results[1].request.url, "/slow?seen")
        self.assertEqual([(h.name, h.value) for h in results[1].request.headers], [("X-VU", "7")])
        r2 = results[2].request
        self.assertEqual((r2.method, r2.url, r2.body), ("POST", "/x?seen", b"{}"))
        self.assertEqual([(h.name, h.value) for h in r2.headers], [("A", "1"), ("a", "2"), ("X-VU", "8")])
        self.assertEqual(results[3].error, "ValueError: no such page")
        self.assertFalse(results[3].HasField("request"))
        self.assertEqual(dict(results[4].vars), {"took_us": "1500", "req": "d"})
        self.assertEqual(results[5].fail, "status 503")
        self.assertEqual(results[6].error, "call has neither before nor after")

    def test_a_cancelled_exchange_lets_go(self):
        servicer = _servicers.URLServicer(Hook(), _servicers.Workers(1))
        ended = threading.Event()

        class Watched(pb_grpc.URLServiceServicer):
            def Exchange(self, request_iterator, context):
                try:
                    yield from servicer.Exchange(request_iterator, context)
                finally:
                    ended.set()

        channel = start(self, lambda s: pb_grpc.add_URLServiceServicer_to_server(Watched(), s))
        release = threading.Event()
        self.addCleanup(release.set)
        self.addCleanup(unblock.set)

        def batches():
            yield pb.ExchangeRequest(calls=[pb.Call(id=1, before=pb.HTTPRequest(url="/"))])
            yield pb.ExchangeRequest(calls=[pb.Call(id=2, before=pb.HTTPRequest(url="/block"))])
            release.wait(10)  # the host keeps the stream open, then gives up on it

        call = pb_grpc.URLServiceStub(channel).Exchange(batches())
        self.assertEqual(next(call).results[0].id, 1)
        self.assertTrue(blocked.wait(5))
        self.assertFalse(ended.is_set())
        call.cancel()
        # Call 2 is still running: the handler must not wait for it to answer a stream that is gone.
        self.assertTrue(ended.wait(5), "the Exchange handler still waits on a cancelled stream")

    def test_session_element(self):
        stub = pb_grpc.SessionElementServiceStub(self.channel)
        self.assertEqual(list(stub.Configure(pb.ConfigureRequest(config_json="{}")).variables), ["n"])
        r = stub.Next(pb.NextRequest(count=2))
        self.assertEqual(([dict(s.vars) for s in r.sets], r.exhausted), ([{"n": "0"}, {"n": "1"}], False))
        r = stub.Next(pb.NextRequest(count=2))
        self.assertEqual(([dict(s.vars) for s in r.sets], r.exhausted), ([{"n": "0"}], True))
        with self.assertRaises(grpc.RpcError) as cm:
            stub.Next(pb.NextRequest(count=0))
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_source_modifier(self):
        r = pb_grpc.SourceModifierServiceStub(self.channel).Modify(
            pb.ModifyRequest(script_json='{"name": "a", "version": 1}', config_json='{"name": "b"}'))
        self.assertEqual(r.script_json, '{"name": "b", "version": 1}')


class HeadersTest(unittest.TestCase):
    def test_names_match_whatever_their_case(self):
        h = bp.Headers([("Accept", "a"), ("X-Id", "1"), ("x-id", "2")])
        self.assertEqual(h.get("x-ID"), "1")
        self.assertEqual(h.get_all("X-ID"), ["1", "2"])
        self.assertIn("accept", h)
        h.set("X-ID", "3")
        self.assertEqual(h.items(), [("Accept", "a"), ("X-ID", "3")])
        h.add("accept", "b")
        del h["ACCEPT"]
        self.assertEqual(list(h), [("X-ID", "3")])
        with self.assertRaises(KeyError):
            h["nope"]


class NegotiateTest(unittest.TestCase):
    def test_speaks_version_1_and_says_when_the_host_does_not(self):
        self.assertEqual(_serve.negotiate("1"), 1)
        self.assertEqual(_serve.negotiate(""), 1)  # a host from before versions: go-plugin's fallback
        with self.assertLogs("barrage_plugin", "WARNING") as cm:
            self.assertEqual(_serve.negotiate("2,x"), 1)
        self.assertIn("the host speaks plugin protocol 2; this plugin speaks 1", "\n".join(cm.output))


class HCLogFormatterTest(unittest.TestCase):
    def test_writes_what_go_plugin_parses(self):
        record = logging.LogRecord("auth", logging.WARNING, __file__, 1, "token for %s expires", ("vu 3",), None)
        record.expires_in = 30
        entry = json.loads(_stdio.HCLogFormatter().format(record))
        self.assertEqual(entry["@level"], "warn")
        self.assertEqual(entry["@message"], "token for vu 3 expires")
        self.assertEqual(entry["@module"], "auth")
        self.assertEqual(entry["expires_in"], 30)
        # go-plugin parses it with the layout 2006-01-02T15:04:05.000000Z07:00.
        self.assertRegex(entry["@timestamp"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class PluginTest(unittest.TestCase):
    def test_validate(self):
        for p, want in [
            (bp.Plugin(name="", version="1", url=Hook()), "name is empty"),
            (bp.Plugin(name="a", version="", url=Hook()), "version is empty"),
            (bp.Plugin(name="a", version="1"), "no hook"),
            (bp.Plugin(name="a", version="1", element=Element()), "scope"),
            (bp.Plugin(name="a", version="1", url=Hook(), config_schema="{"), "not JSON"),
        ]:
            with self.subTest(want):
                with self.assertRaisesRegex(ValueError, want):
                    p.validate()


if __name__ == "__main__":
    unittest.main()
