"""Unit tests of the correlation-id hook, without a host. Run from this directory with the
SDK on the path (plugin_test.go does):

    PYTHONPATH=../../../sdk/python "$(../../../scripts/python-env.sh)" -B -m unittest -v
"""

import json
import unittest
import uuid

import barrage_plugin as bp
import correlation_id as cid

CALL = bp.Call(vu=1, iteration=1, request="home")


def configured(config):
    hook = cid.CorrelationID()
    hook.configure(config)
    return hook


def sent(hook, headers=None):
    """sent runs before on a request and returns it."""
    req = bp.Request(method="GET", url="http://127.0.0.1/", headers=bp.Headers(headers or {}))
    hook.before(CALL, req)
    return req


class ConfigTest(unittest.TestCase):
    def test_defaults(self):
        self.assertEqual(cid.parse({}), cid.Settings(header="X-Correlation-ID", require_echo=False))

    def test_both_settings(self):
        self.assertEqual(
            cid.parse({"header": "X-Request-ID", "require_echo": True}),
            cid.Settings(header="X-Request-ID", require_echo=True),
        )

    def test_errors_name_the_field(self):
        for config, field in [
            ({"header": ""}, "header"),
            ({"header": "X Request"}, "header"),
            ({"header": 5}, "header"),
            ({"require_echo": "yes"}, "require_echo"),
            ({"echo": True}, "echo"),
        ]:
            with self.subTest(config=config):
                with self.assertRaises(bp.ConfigError) as cm:
                    cid.parse(config)
                self.assertEqual(cm.exception.field, field)

    def test_a_refused_config_keeps_the_settings(self):
        hook = configured({"header": "X-Request-ID"})
        with self.assertRaises(bp.ConfigError):
            hook.configure({"header": ""})
        self.assertEqual(hook.settings.header, "X-Request-ID")

    def test_schema_defaults_match_the_code(self):
        schema = json.loads(cid.CONFIG_SCHEMA)
        self.assertEqual(schema["properties"]["header"]["default"], cid.Settings().header)
        self.assertEqual(schema["properties"]["require_echo"]["default"], cid.Settings().require_echo)
        self.assertFalse(schema["additionalProperties"])


class BeforeTest(unittest.TestCase):
    def test_sets_a_fresh_uuid4(self):
        hook = configured({})
        ids = {sent(hook).headers.get("x-correlation-id") for _ in range(100)}
        self.assertEqual(len(ids), 100)
        for i in ids:
            self.assertEqual(uuid.UUID(i).version, 4)

    def test_replaces_an_id_the_script_set_and_keeps_other_headers(self):
        req = sent(configured({}), {"x-correlation-id": "old", "Accept": "*/*"})
        self.assertNotEqual(req.headers.get("X-Correlation-ID"), "old")
        self.assertEqual(req.headers.get_all("X-Correlation-ID"), [req.headers.get("X-Correlation-ID")])
        self.assertEqual(req.headers.get("Accept"), "*/*")

    def test_custom_header(self):
        req = sent(configured({"header": "X-Request-ID"}))
        self.assertIn("X-Request-ID", req.headers)
        self.assertNotIn("X-Correlation-ID", req.headers)


class AfterTest(unittest.TestCase):
    def test_sets_the_variable(self):
        hook = configured({})
        req = sent(hook)
        out = hook.after(CALL, req, bp.Response(status=200))
        self.assertEqual(out, bp.Outcome(vars={"correlation_id": req.headers.get("X-Correlation-ID")}))

    def test_require_echo(self):
        hook = configured({"require_echo": True})
        req = sent(hook)
        id_ = req.headers.get("X-Correlation-ID")
        for name, headers, want in [
            ("echoed", {"x-correlation-id": id_}, bp.Outcome(vars={"correlation_id": id_})),
            ("missing", {}, bp.Outcome(fail="correlation id not echoed")),
            ("another id", {"X-Correlation-ID": str(uuid.uuid4())}, bp.Outcome(fail="correlation id not echoed")),
        ]:
            with self.subTest(name):
                self.assertEqual(hook.after(CALL, req, bp.Response(status=200, headers=bp.Headers(headers))), want)

    def test_nothing_sent(self):
        req = bp.Request()
        self.assertIsNone(configured({}).after(CALL, req, bp.Response(status=200)))
        self.assertEqual(
            configured({"require_echo": True}).after(CALL, req, bp.Response(status=200)),
            bp.Outcome(fail="correlation id not echoed"),
        )


class PluginTest(unittest.TestCase):
    def test_describes_a_url_hook(self):
        p = cid.plugin()
        p.validate()
        self.assertEqual((p.name, p.version, p.kinds()), ("correlation-id", "1.0.0", [bp.KIND_URL]))


if __name__ == "__main__":
    unittest.main()
