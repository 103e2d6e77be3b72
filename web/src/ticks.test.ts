/// <reference types="node" />
import { test } from "node:test";
import assert from "node:assert/strict";
import { ticks } from "./ticks";

test("ticks are the multiples of the step within the scale", () => {
  assert.deepEqual(ticks(0, 10, 2.5), [0, 2.5, 5, 7.5, 10]);
  assert.deepEqual(ticks(0.3, 1.05, 0.2), [0.4, 0.6, 0.8, 1]);
  assert.deepEqual(ticks(-1, 1, 0.5), [-1, -0.5, 0, 0.5, 1]);
  assert.deepEqual(ticks(0.1, 0.30000000000000004, 0.1), [0.1, 0.2, 0.3]);
});

test("ticks end where uPlot's loop would not", () => {
  // uPlot#827: a flat line at 1e14 gave a step that adding leaves the value as it was.
  assert.ok(ticks(1e14, 1e14, 1e-8).length <= 64);
  // A scale far wider than its step.
  assert.equal(ticks(0, 1e9, 1e-3).length, 64);
});

test("no ticks for a scale or step that has none", () => {
  assert.deepEqual(ticks(0, 10, 0), []);
  assert.deepEqual(ticks(0, Infinity, 1), []);
  assert.deepEqual(ticks(NaN, 1, 1), []);
  assert.deepEqual(ticks(5, 1, 1), []);
});
