// Builds the portal into ../internal/portal/dist, which barrage serve embeds: app.js (the
// bundle, minified) and its chunks, app.css and index.html. The output depends on the sources
// and the locked versions alone, so that `make verify` can build it again and find no difference.
import * as esbuild from "esbuild";
import { mkdirSync, copyFileSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "internal", "portal", "dist");
mkdirSync(out, { recursive: true });
// Pages loaded when first opened (the wizard) are chunks beside app.js; a build replaces them all.
for (const f of readdirSync(out)) if (f.startsWith("chunk-")) rmSync(join(out, f));
await esbuild.build({
  entryPoints: { app: join(here, "src", "main.tsx") },
  outdir: out,
  splitting: true,
  chunkNames: "chunk-[hash]",
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
await esbuild.build({
  entryPoints: [join(here, "src", "style.css")],
  outfile: join(out, "app.css"),
  bundle: true,
  minify: true,
  legalComments: "none",
  charset: "utf8",
  logLevel: "warning",
});
copyFileSync(join(here, "src", "index.html"), join(out, "index.html"));
