/// <reference types="node" />
import { test } from "node:test";
import assert from "node:assert/strict";
import { parse, safeHref, safeSrc, tooDeep } from "./markdown";

const base = "http://127.0.0.1:8080";

test("a README's links go to the web, to mail or to this server, and nowhere else", () => {
  assert.equal(safeHref("https://example.com/x", base), "https://example.com/x");
  assert.equal(safeHref("mailto:ada@example.com", base), "mailto:ada@example.com");
  assert.equal(safeHref("/plugins/acme/x", base), base + "/plugins/acme/x");
  assert.equal(safeHref("#usage", base), base + "/#usage");
  for (const bad of ["javascript:alert(1)", " JavaScript:alert(1)", "java\tscript:alert(1)", "data:text/html,<script>", "vbscript:x", "file:///etc/passwd"]) {
    assert.equal(safeHref(bad, base), undefined, bad);
  }
});

test("a README's images are the portal's own files alone", () => {
  assert.equal(safeSrc("/assets/logo.png", base), base + "/assets/logo.png");
  for (const bad of ["https://tracker.example.com/pixel.gif", "//tracker.example.com/p.gif", "data:image/png;base64,AAAA", "javascript:x",
    // the API, with the reader's session: a download counted, an artifact streamed
    "/v1/plugins/acme/x/versions/1.0.0/download/linux/amd64", "/v1/plugins/acme/x/versions/1.0.0/download/linux/amd64/file",
    "/assets/../v1/me", "/assets/x.png?then=/v1/me"]) {
    assert.equal(safeSrc(bad, base), undefined, bad);
  }
});

test("a README nested past what the portal renders is not parsed", () => {
  assert.equal(tooDeep("> ".repeat(10000) + "x"), true);
  assert.equal(tooDeep("- ".repeat(10000) + "x"), true);
  assert.equal(tooDeep("> 1. - ".repeat(3400)), true);
  assert.equal(tooDeep("> > quoted\n- a\n  - b\n    1. c\n"), false);
  assert.equal(tooDeep("--- a rule, not 33 list items: " + "-".repeat(100)), false);
});

test("raw HTML in a README is a node of its own, which the renderer shows as text", () => {
  const tree = parse('<script>alert(1)</script>\n\nText <img src=x onerror="alert(1)"> more.\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n');
  const types = tree.children.map((c) => c.type);
  assert.deepEqual(types, ["html", "paragraph", "table"]);
  const para = tree.children[1];
  assert.ok(para.type === "paragraph" && para.children.some((c) => c.type === "html" && c.value.includes("onerror")));
});
