/// <reference types="node" />
import { test } from "node:test";
import assert from "node:assert/strict";
import { rangeOf, withPlugin } from "./pluginpicker";

const rnd = { use: "acme/random-data@^1.0", as: "rnd", kind: "session-element" as const };

test("a plugin goes under the script's plugins block, or a new one at its end", () => {
  assert.equal(withPlugin("version: 1\nname: x\n", rnd), "version: 1\nname: x\nplugins:\n  - { use: acme/random-data@^1.0, as: rnd, kind: session-element }\n");
  assert.equal(withPlugin("version: 1\nname: x", rnd), "version: 1\nname: x\nplugins:\n  - { use: acme/random-data@^1.0, as: rnd, kind: session-element }\n");
  assert.equal(
    withPlugin("plugins: # ours\n  - { use: a/b@1.0.0, as: b, kind: url }\nload:\n  vus: 1\n", rnd),
    "plugins: # ours\n  - { use: acme/random-data@^1.0, as: rnd, kind: session-element }\n  - { use: a/b@1.0.0, as: b, kind: url }\nload:\n  vus: 1\n",
  );
  assert.equal(withPlugin("plugins: []\nload: {}\n", rnd), "plugins:\n  - { use: acme/random-data@^1.0, as: rnd, kind: session-element }\nload: {}\n");
  assert.equal(
    withPlugin("name: x\n", { ...rnd, network: ["db.internal:5432"] }),
    'name: x\nplugins:\n  - { use: acme/random-data@^1.0, as: rnd, kind: session-element, network: ["db.internal:5432"] }\n',
  );
});

test("a JSON script gains the plugin in its plugins list", () => {
  const out = JSON.parse(withPlugin('{"version": 1, "plugins": [{"use": "a/b@1.0.0", "as": "b", "kind": "url"}]}', rnd));
  assert.deepEqual(out.plugins, [{ use: "a/b@1.0.0", as: "b", kind: "url" }, { use: "acme/random-data@^1.0", as: "rnd", kind: "session-element" }]);
});

test("the range of a version is its line", () => {
  assert.equal(rangeOf("1.4.2"), "^1.4");
  assert.equal(rangeOf("0.3.0-beta.1+build"), "^0.3");
});
