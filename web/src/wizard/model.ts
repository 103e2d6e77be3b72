// The wizard's model of a script: the form's state, made from the script's object and made back
// into one. Every part keeps the object it came from (src), and writing it back puts the edited
// keys into a copy of that object, in its order: what the wizard does not edit (variables,
// plugins, a request's query or timeout, an assertion's name...) is kept as it was written.
// Reading and writing the YAML is wizard/source.ts's, which the wizard's page alone loads.

/** Obj is a mapping of a script. */
export type Obj = Record<string, unknown>;

/** Row is a name and its value: a header, a form field. */
export interface Row {
  name: string;
  value: string;
}

export type BodyKind = "none" | "json" | "form" | "raw" | "kept";

export interface BodyModel {
  kind: BodyKind;
  json: string;
  form: Row[];
  raw: string;
  contentType: string;
  src: Obj;
}

export const extractorKinds = ["json", "regex", "header", "cookie"] as const;
export type ExtractorKind = (typeof extractorKinds)[number];

export interface ExtractorModel {
  var: string;
  kind: ExtractorKind;
  expr: string;
  default: string;
  src: Obj;
}

/** An assertion's check: a text one (status, body_contains, body_matches, max_duration), a JSON
 * path's (json), or one the wizard does not know, kept as written (kept). */
export const assertionKinds = ["status", "body_contains", "body_matches", "json", "max_duration"] as const;
export type AssertionKind = (typeof assertionKinds)[number] | "kept";

export interface AssertionModel {
  kind: AssertionKind;
  text: string; // status (200, 201 or 2xx), body_contains, body_matches, max_duration
  path: string; // json
  test: "equals" | "exists" | "absent"; // json
  equals: string; // json + equals, as valueText writes it
  src: Obj;
}

export interface RequestModel {
  name: string;
  method: string;
  url: string;
  headers: Row[];
  body: BodyModel;
  think: string;
  extract: ExtractorModel[];
  assert: AssertionModel[];
  src: Obj;
}

export interface GroupModel {
  name: string;
  think: string;
  requests: RequestModel[];
  src: Obj;
}

export type LoadKind = "closed" | "closed-stages" | "open" | "open-stages";

export interface StageModel {
  ramp: boolean; // ramp_to, else hold (vus or rate)
  target: string; // VUs, or a rate per second (100, or 90/m)
  duration: string;
  src: Obj;
}

export interface LoadModel {
  kind: LoadKind;
  vus: string;
  duration: string;
  rampUp: string;
  iterations: string;
  rate: string;
  maxVus: string;
  stages: StageModel[];
  src: Obj;
}

export interface Model {
  name: string;
  baseURL: string;
  groups: GroupModel[];
  load: LoadModel;
  src: Obj;
}

export const methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"];

function obj(v: unknown): Obj {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Obj) : {};
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function text(v: unknown): string {
  return v === undefined || v === null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** orUndef is s, or undefined (no key at all) when s is empty. */
function orUndef(s: string): string | undefined {
  return s.trim() === "" ? undefined : s;
}

/** num writes a count typed as text as a number, leaving anything else as typed for the server
 * to judge. */
function num(s: string): number | string | undefined {
  const t = s.trim();
  if (t === "") return undefined;
  return /^\d+$/.test(t) ? Number(t) : t;
}

/** merge writes edited into a copy of src, in src's order: an undefined value removes its key,
 * and keys new to src come last, in edited's order. */
export function merge(src: Obj, edited: Obj): Obj {
  const out: Obj = {};
  for (const [k, v] of Object.entries(src)) {
    const e = k in edited ? edited[k] : v;
    if (e !== undefined) out[k] = e;
  }
  for (const [k, v] of Object.entries(edited)) if (!(k in src) && v !== undefined) out[k] = v;
  return out;
}

/** valueText writes a value to compare with as text: a string as it is unless it would read as
 * JSON ("42" is written "\"42\""), anything else as JSON. textValue reads it back, exactly. */
export function valueText(v: unknown): string {
  if (typeof v === "string") {
    try {
      JSON.parse(v);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v);
}

export function textValue(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

function rows(v: unknown): Row[] {
  return Object.entries(obj(v)).map(([name, value]) => ({ name, value: text(value) }));
}

function fromRows(rs: Row[]): Obj | undefined {
  const out: Obj = {};
  for (const r of rs) if (r.name.trim()) out[r.name.trim()] = r.value;
  return Object.keys(out).length ? out : undefined;
}

function scalar(v: unknown): boolean {
  return v === null || typeof v !== "object";
}

function bodyModel(v: unknown): BodyModel {
  const b = obj(v);
  const m: BodyModel = { kind: "none", json: "", form: [], raw: "", contentType: text(b.content_type), src: b };
  if ("json" in b) return { ...m, kind: "json", json: JSON.stringify(b.json, null, 2) };
  if ("form" in b && Object.values(obj(b.form)).every(scalar)) return { ...m, kind: "form", form: rows(b.form) };
  if ("raw" in b) return { ...m, kind: "raw", raw: text(b.raw) };
  return v === undefined ? m : { ...m, kind: "kept" };
}

/** A new body of kind: none, or an empty one to fill in. */
export function newBody(kind: BodyKind): BodyModel {
  return { kind, json: kind === "json" ? "{}" : "", form: [], raw: "", contentType: "", src: {} };
}

function extractorModel(v: unknown): ExtractorModel {
  const e = obj(v);
  const kind = extractorKinds.find((k) => k in e) ?? "json";
  return { var: text(e.var), kind, expr: text(e[kind]), default: text(e.default), src: e };
}

function assertionModel(v: unknown): AssertionModel {
  const a = obj(v);
  const m: AssertionModel = { kind: "kept", text: "", path: "", test: "equals", equals: "", src: a };
  if ("json" in a) {
    const test = "equals" in a ? "equals" : a.exists === false ? "absent" : "exists";
    return { ...m, kind: "json", path: text(a.json), test, equals: "equals" in a ? valueText(a.equals) : "" };
  }
  const kind = assertionKinds.find((k) => k in a);
  if (!kind) return m;
  const t = kind === "status" ? list(a.status).map(String).join(", ") || text(a.status) : text(a[kind]);
  return { ...m, kind, text: t };
}

/** newAssertion is an empty check of kind. */
export function newAssertion(kind: AssertionKind): AssertionModel {
  return { kind, text: kind === "status" ? "200" : "", path: "", test: "equals", equals: "", src: {} };
}

function requestModel(v: unknown): RequestModel {
  const r = obj(v);
  return {
    name: text(r.name),
    method: text(r.method).toUpperCase() || "GET",
    url: text(r.url),
    headers: rows(r.headers),
    body: bodyModel(r.body),
    think: typeof r.think === "object" ? "" : text(r.think),
    extract: list(r.extract).map(extractorModel),
    assert: list(r.assert).map(assertionModel),
    src: r,
  };
}

/** newRequest is a GET of url named name. */
export function newRequest(name: string, url: string): RequestModel {
  return { name, method: "GET", url, headers: [], body: newBody("none"), think: "", extract: [], assert: [], src: {} };
}

/** stripRate reads a rate per second as its number ("100/s" is 100), and any other unit as
 * written; rateText writes it back. */
function stripRate(v: unknown): string {
  return text(v).replace(/\/s$/, "");
}

function rateText(s: string): string | undefined {
  const t = s.trim();
  if (t === "") return undefined;
  return /^\d+(\.\d+)?$/.test(t) ? `${t}/s` : t;
}

function loadKind(l: Obj): LoadKind {
  if (Array.isArray(l.stages)) {
    const rates = "max_vus" in l || l.stages.some((s) => /\//.test(text(obj(s).rate ?? obj(s).ramp_to)));
    return rates ? "open-stages" : "closed-stages";
  }
  return "rate" in l ? "open" : "closed";
}

function loadModel(v: unknown): LoadModel {
  const l = obj(v);
  return {
    kind: loadKind(l),
    vus: text(l.vus),
    duration: text(l.duration),
    rampUp: text(l.ramp_up),
    iterations: text(l.iterations),
    rate: stripRate(l.rate),
    maxVus: text(l.max_vus),
    stages: list(l.stages).map((s) => {
      const st = obj(s);
      const ramp = "ramp_to" in st;
      const target = ramp ? st.ramp_to : (st.vus ?? st.rate);
      return { ramp, target: stripRate(target), duration: text(st.duration), src: st };
    }),
    src: l,
  };
}

/** unsupported says why the wizard cannot show script, or is empty when it can. */
export function unsupported(script: unknown): string {
  if (script === null || typeof script !== "object" || Array.isArray(script)) return "The script is not a mapping of keys.";
  const s = script as Obj;
  if ("scenarios" in s) return "The script has scenarios, which the wizard does not show.";
  if (!Array.isArray(obj(s.session).groups)) return "The script has no session with a list of groups.";
  for (const g of obj(s.session).groups as unknown[]) {
    const rs = obj(g).requests;
    if (!Array.isArray(rs)) return `The group ${text(obj(g).name)} has no list of requests.`;
    for (const r of rs) {
      if ("batch" in obj(r)) return `The group ${text(obj(g).name)} sends a batch of requests, which the wizard does not show.`;
      if ("websocket" in obj(r)) return `The request ${text(obj(r).name)} is a WebSocket session, which the wizard does not show.`;
    }
  }
  return "";
}

/** toModel is the form of script, which unsupported accepts. */
export function toModel(script: Obj): Model {
  return {
    name: text(script.name),
    baseURL: text(script.base_url),
    groups: list(obj(script.session).groups).map((g) => {
      const o = obj(g);
      return { name: text(o.name), think: typeof o.think === "object" ? "" : text(o.think), requests: list(o.requests).map(requestModel), src: o };
    }),
    load: loadModel(script.load),
    src: script,
  };
}

/** Problems are what the wizard finds wrong before the server sees it, by the path of the field
 * (as the server names fields: session.groups[0].requests[1].body). */
export type Problems = Map<string, string>;

function bodyObj(b: BodyModel, at: string, problems: Problems): Obj | undefined {
  const none: Obj = { json: undefined, form: undefined, raw: undefined, file: undefined, multipart: undefined, content_type: orUndef(b.contentType) };
  switch (b.kind) {
    case "none":
      return undefined;
    case "kept":
      return b.src;
    case "json": {
      let json: unknown = b.json;
      try {
        json = JSON.parse(b.json);
      } catch (e) {
        problems.set(at, `not JSON: ${(e as Error).message}`);
      }
      return merge(b.src, { ...none, json });
    }
    case "form":
      return merge(b.src, { ...none, form: fromRows(b.form) ?? {} });
    case "raw":
      return merge(b.src, { ...none, raw: b.raw });
  }
}

function extractorObj(e: ExtractorModel): Obj {
  const kinds: Obj = { json: undefined, regex: undefined, header: undefined, cookie: undefined };
  return merge(e.src, { var: e.var, ...kinds, [e.kind]: e.expr, default: orUndef(e.default) });
}

function assertionObj(a: AssertionModel): Obj {
  if (a.kind === "kept") return a.src;
  const none: Obj = { status: undefined, body_contains: undefined, body_matches: undefined, json: undefined, equals: undefined, exists: undefined, max_duration: undefined };
  if (a.kind === "json") {
    const test = a.test === "equals" ? { equals: textValue(a.equals) } : { exists: a.test === "absent" ? false : a.src.exists === true || undefined };
    return merge(a.src, { ...none, json: a.path, ...test });
  }
  if (a.kind === "status") {
    const codes = a.text.split(",").map((c) => num(c) ?? "").filter((c) => c !== "");
    return merge(a.src, { ...none, status: codes.length === 1 ? codes[0] : codes });
  }
  return merge(a.src, { ...none, [a.kind]: a.text });
}

function requestObj(r: RequestModel, at: string, problems: Problems): Obj {
  return merge(r.src, {
    name: r.name,
    method: r.method === "GET" && !("method" in r.src) ? undefined : r.method,
    url: r.url,
    headers: fromRows(r.headers),
    body: bodyObj(r.body, `${at}.body`, problems),
    think: orUndef(r.think) ?? (typeof r.src.think === "object" ? r.src.think : undefined),
    extract: r.extract.length ? r.extract.map(extractorObj) : undefined,
    assert: r.assert.length ? r.assert.map(assertionObj) : undefined,
  });
}

function loadObj(l: LoadModel): Obj {
  const none: Obj = { vus: undefined, duration: undefined, ramp_up: undefined, iterations: undefined, rate: undefined, max_vus: undefined, stages: undefined };
  const open = l.kind === "open" || l.kind === "open-stages";
  const stages = l.stages.map((s) => {
    const target = open ? rateText(s.target) : num(s.target);
    const hold = open ? { rate: target } : { vus: target };
    return merge(s.src, { vus: undefined, rate: undefined, ramp_to: undefined, ...(s.ramp ? { ramp_to: target } : hold), duration: orUndef(s.duration) });
  });
  switch (l.kind) {
    case "closed":
      return merge(l.src, { ...none, vus: num(l.vus), duration: orUndef(l.duration), ramp_up: orUndef(l.rampUp), iterations: num(l.iterations) });
    case "closed-stages":
      return merge(l.src, { ...none, stages });
    case "open":
      return merge(l.src, { ...none, rate: rateText(l.rate), duration: orUndef(l.duration), max_vus: num(l.maxVus) });
    case "open-stages":
      return merge(l.src, { ...none, stages, max_vus: num(l.maxVus) });
  }
}

/** toScript is the script of model m, with what the wizard found wrong in it. */
export function toScript(m: Model): { script: Obj; problems: Problems } {
  const problems: Problems = new Map();
  const groups = m.groups.map((g, gi) =>
    merge(g.src, {
      name: g.name,
      think: orUndef(g.think) ?? (typeof g.src.think === "object" ? g.src.think : undefined),
      requests: g.requests.map((r, ri) => requestObj(r, `session.groups[${gi}].requests[${ri}]`, problems)),
    }),
  );
  const script = merge({ version: 1, ...m.src }, {
    name: orUndef(m.name),
    base_url: orUndef(m.baseURL),
    session: merge(obj(m.src.session), { groups }),
    load: loadObj(m.load),
  });
  return { script, problems };
}

/** starter is the script a new test starts from: one GET to the demo shop, then a second of
 * thought, 5 VUs for 30 s. */
export const starter: Obj = {
  version: 1,
  name: "products",
  session: { groups: [{ name: "browse", requests: [{ name: "list products", url: "http://127.0.0.1:8081/api/products", think: "1s" }] }] },
  load: { vus: 5, duration: "30s" },
};

/** jsonPath is the path of a member (key) or an element (index) under the path parent, in the
 * subset the scripts' JSON paths read: $.a.b[0], $['odd key']. */
export function jsonPath(parent: string, key: string | number): string {
  if (typeof key === "number") return `${parent}[${key}]`;
  if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(key)) return `${parent}.${key}`;
  return `${parent}['${key.replace(/[\\']/g, (c) => "\\" + c)}']`;
}

/** varName suggests a variable for what a pick named (a JSON path's last member, a header),
 * unused among taken. */
export function varName(from: string, taken: Set<string>): string {
  const members = from.match(/[A-Za-z_][A-Za-z0-9_-]*|'(?:[^'\\]|\\.)*'/g) ?? [];
  let base = (members[members.length - 1] ?? "value").toLowerCase().replace(/[^a-z0-9_]+/g, "_").replace(/^_+|_+$/g, "");
  if (!/^[a-z_]/.test(base)) base = "v_" + base;
  let name = base;
  for (let n = 2; taken.has(name); n++) name = `${base}_${n}`;
  return name;
}

/** A Pick is something picked from a debugged response, to extract or assert on the request
 * named request: a JSON value at its path, a response header, or the status. */
export type Pick =
  | { request: string; as: "extract" | "assert"; json: string; value: unknown }
  | { request: string; as: "extract"; header: string }
  | { request: string; as: "assert"; status: number };

/** applyPick adds what p picked to its request of m: the new model, and where the new
 * extractor or assertion is (its group, request, list and index), or undefined when no request
 * of m has the name. */
export function applyPick(m: Model, p: Pick): { model: Model; at: { g: number; r: number; list: "extract" | "assert"; i: number } } | undefined {
  for (const [g, group] of m.groups.entries()) {
    const r = group.requests.findIndex((x) => x.name === p.request);
    if (r < 0) continue;
    const req = group.requests[r];
    const taken = new Set(m.groups.flatMap((x) => x.requests.flatMap((y) => y.extract.map((e) => e.var))));
    let next: RequestModel;
    if (p.as === "extract") {
      const [kind, expr] = "json" in p ? (["json", p.json] as const) : (["header", p.header] as const);
      const e: ExtractorModel = { var: varName(expr, taken), kind, expr, default: "", src: {} };
      next = { ...req, extract: [...req.extract, e] };
    } else {
      const a: AssertionModel =
        "json" in p ? { ...newAssertion("json"), path: p.json, equals: valueText(p.value) } : { ...newAssertion("status"), text: String(p.status) };
      next = { ...req, assert: [...req.assert, a] };
    }
    const list = p.as === "extract" ? next.extract : next.assert;
    return {
      model: { ...m, groups: m.groups.map((x, gi) => (gi === g ? { ...x, requests: x.requests.map((y, ri) => (ri === r ? next : y)) } : x)) },
      at: { g, r, list: p.as, i: list.length - 1 },
    };
  }
  return undefined;
}

/** parentPath is the path of what holds the field at p: session.groups[0] for
 * session.groups[0].name, "" for name. */
function parentPath(p: string): string {
  return p.slice(0, Math.max(0, p.lastIndexOf("."), p.lastIndexOf("[")));
}

/** fieldPaths are the paths of the fields the form shows errors beside, as the server names
 * them: a group's or request's own, and the whole group, request, extractor or assertion. */
export function fieldPaths(m: Model): Set<string> {
  const paths = ["name", "base_url", "load", "load.vus", "load.duration", "load.ramp_up", "load.iterations", "load.rate", "load.max_vus"];
  m.load.stages.forEach((_, i) => paths.push(`load.stages[${i}]`));
  m.groups.forEach((g, gi) => {
    const gp = `session.groups[${gi}]`;
    paths.push(gp, `${gp}.name`, `${gp}.think`);
    g.requests.forEach((r, ri) => {
      const rp = `${gp}.requests[${ri}]`;
      paths.push(rp, ...["name", "method", "url", "headers", "body", "think"].map((k) => `${rp}.${k}`));
      r.extract.forEach((_, i) => paths.push(`${rp}.extract[${i}]`));
      r.assert.forEach((_, i) => paths.push(`${rp}.assert[${i}]`));
    });
  });
  return new Set(paths);
}

/** placeErrors puts each error at the deepest of paths its field lies under; those under none
 * are returned apart. */
export function placeErrors<E extends { field: string; reason: string }>(errors: E[], paths: Set<string>): { at: Map<string, string[]>; rest: E[] } {
  const at = new Map<string, string[]>();
  const rest: E[] = [];
  for (const e of errors) {
    let p = e.field;
    while (p && !paths.has(p)) p = parentPath(p);
    if (p) at.set(p, [...(at.get(p) ?? []), e.reason]);
    else rest.push(e);
  }
  return { at, rest };
}

/** replaceAt is xs with its element i made by f. */
export function replaceAt<T>(xs: T[], i: number, f: (x: T) => T): T[] {
  return xs.map((x, j) => (j === i ? f(x) : x));
}

/** removeAt is xs without its element i. */
export function removeAt<T>(xs: T[], i: number): T[] {
  return xs.filter((_, j) => j !== i);
}

/** moveAt is xs with its element i moved by one place, up (-1) or down (1). */
export function moveAt<T>(xs: T[], i: number, by: -1 | 1): T[] {
  const j = i + by;
  if (j < 0 || j >= xs.length) return xs;
  const out = [...xs];
  [out[i], out[j]] = [out[j], out[i]];
  return out;
}
