// Runs the portal's unit tests (src/**/*.test.ts) with node's own runner, each bundled first by
// esbuild (Node runs no TypeScript of itself).
import * as esbuild from "esbuild";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const src = join(here, "src");
const tests = readdirSync(src, { recursive: true }).filter((f) => String(f).endsWith(".test.ts")).map((f) => join(src, String(f)));
const out = mkdtempSync(join(tmpdir(), "portal-test-"));
try {
  await esbuild.build({ entryPoints: tests, outdir: out, bundle: true, platform: "node", format: "esm", outExtension: { ".js": ".mjs" }, logLevel: "warning" });
  const built = readdirSync(out, { recursive: true }).filter((f) => String(f).endsWith(".mjs")).map((f) => join(out, String(f)));
  const run = spawnSync(process.execPath, ["--test", ...built], { stdio: "inherit" });
  process.exitCode = run.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
