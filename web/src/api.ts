// The portal's only way to the server: the public API under /v1, signed in by the session's
// cookies (which no script here can read), with the CSRF token the server set for the page.

/** A field the server refused, and why. */
export interface FieldError {
  field: string;
  reason: string;
  line?: number;
  column?: number;
}

/** An RFC 9457 problem the API answered. */
export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string,
    readonly errors: FieldError[] = [],
    readonly violations: LimitViolation[] = [],
  ) {
    super(detail || title);
  }

  /** The reason given for field, if the server named it. */
  reasonFor(field: string): string | undefined {
    return this.errors.find((e) => e.field === field)?.reason;
  }
}

function cookie(name: string): string {
  for (const part of document.cookie.split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return decodeURIComponent(v.join("="));
  }
  return "";
}

let signedOut: () => void = () => {};

/** onSignedOut is called when the session has ended and could not be renewed. */
export function onSignedOut(f: () => void) {
  signedOut = f;
}

/** Raw is a body sent as it is, with its own content type: a YAML script, a data file. */
export class Raw {
  constructor(
    readonly body: BodyInit,
    readonly contentType: string,
  ) {}
}

async function send(method: string, path: string, body?: unknown, extra?: Record<string, string>, signal?: AbortSignal): Promise<Response> {
  const headers: Record<string, string> = { Accept: "application/json", ...extra };
  let sent: BodyInit | undefined;
  if (body instanceof Raw) {
    headers["Content-Type"] = body.contentType;
    sent = body.body;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    sent = JSON.stringify(body);
  }
  if (method !== "GET" && method !== "HEAD") headers["X-CSRF-Token"] = cookie("barrage_csrf");
  return fetch(path, { method, headers, credentials: "same-origin", body: sent, signal });
}

/** discard lets go of an answer whose body nobody reads: until it is read or let go, the browser
 * holds it, and counts its request as still loading. */
function discard(res: Response) {
  res.body?.cancel().catch(() => {});
}

async function problem(res: Response): Promise<Problem> {
  try {
    const p = await res.json();
    return new Problem(res.status, p.title ?? res.statusText, p.detail ?? "", Array.isArray(p.errors) ? p.errors : [],
      Array.isArray(p.violations) ? p.violations : []);
  } catch {
    return new Problem(res.status, res.statusText, "");
  }
}

let renewing: Promise<boolean> | null = null;

/** renew exchanges the session's refresh cookie for new cookies, once for every caller waiting. */
function renew(): Promise<boolean> {
  renewing ??= send("POST", "/v1/auth/session/refresh")
    .then((r) => {
      discard(r);
      return r.ok;
    })
    .catch(() => false)
    .finally(() => {
      renewing = null;
    });
  return renewing;
}

/** respond sends a request to the API, renewing an expired session once, transparently, and
 * returns the answer; one that is not a success is thrown as its Problem. */
export async function respond(method: string, path: string, body?: unknown, headers?: Record<string, string>, signal?: AbortSignal): Promise<Response> {
  let res = await send(method, path, body, headers, signal);
  // Only a page with a session (its CSRF cookie says so) has one to renew.
  if (res.status === 401 && !path.startsWith("/v1/auth/") && cookie("barrage_csrf") !== "") {
    if (await renew()) {
      discard(res);
      res = await send(method, path, body, headers, signal);
    }
    if (res.status === 401) {
      signedOut();
    }
  }
  if (!res.ok) throw await problem(res);
  return res;
}

/** call sends a request to the API and returns its JSON answer, or throws its Problem. */
export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await respond(method, path, body);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

/** loadPages reads a list's first page of 50 and the pages after it that cursors name (each the
 * cursor the page before gave), and says the cursor of the page after the last. */
export async function loadPages<T>(path: string, filter: Record<string, string | string[] | number | undefined>, cursors: string[]): Promise<{ items: T[]; next?: string }> {
  let page = await call<Page<T>>("GET", path + query({ ...filter, limit: 50 }));
  const items = [...page.items];
  for (const cursor of cursors) {
    page = await call<Page<T>>("GET", path + query({ ...filter, limit: 50, cursor }));
    items.push(...page.items);
  }
  return { items, next: page.next_cursor };
}

/** query makes a query string of the values given, leaving out the empty ones. */
export function query(values: Record<string, string | string[] | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) {
    if (v === undefined || v === "") continue;
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

// The API's shapes the portal reads (api/openapi.yaml has them all).

export type ProjectRole = "owner" | "editor" | "runner" | "viewer";

export interface Project {
  id: string;
  name: string;
  personal: boolean;
  role: ProjectRole;
  members: number;
  created_at: string;
}

export interface ProjectDetail extends Project {
  member_list: { user_id: string; email: string; name: string; role: ProjectRole; added_at: string }[];
}

export interface ProjectInvitation {
  id: string;
  project_id: string;
  project_name: string;
  user_id: string;
  email: string;
  role: ProjectRole;
  invited_by?: string;
  created_at: string;
}

/** projectInAddress is the project the page's address names (?project=), where what it makes goes. */
export function projectInAddress(): string | undefined {
  return new URLSearchParams(location.search).get("project") ?? undefined;
}

export interface User {
  id: string;
  email: string;
  name: string;
  role: "admin" | "user";
  disabled: boolean;
  license?: License;
  password_guessed_at?: string;
  created_at: string;
}

export interface License {
  unlimited: boolean;
  plan?: string;
  max_vus?: number;
  max_run_duration_seconds?: number;
  max_concurrent_runs?: number;
  valid_until?: string;
  expired?: boolean;
}

export interface QuotaUse {
  limit: number;
  used: number;
}

export interface MyLicense extends License {
  quotas?: Record<string, QuotaUse>;
}

export interface APIToken {
  id: string;
  name: string;
  scopes: string[];
  created_at: string;
  expires_at?: string;
  last_used_at?: string;
}

export interface Page<T> {
  items: T[];
  next_cursor?: string;
}

export interface BrowserSession {
  user: User;
  expires_in: number;
}

// Tests.

export interface FileRef {
  name: string;
  sha256: string;
  size: number;
  updated_at?: string;
}

export interface TestLastRun {
  id: string;
  state: RunState;
  created_at: string;
  ended_at?: string;
  outcome?: RunOutcome;
}

export interface Test {
  id: string;
  project_id: string;
  name: string;
  latest_revision: number;
  files: FileRef[];
  created_at: string;
  updated_at: string;
  last_run?: TestLastRun;
  baseline?: Baseline;
}

/** Baseline is a test's baseline run and the tolerances its later runs are held to, in percent
 * (points for the error rate). */
export interface Baseline {
  run_id: string;
  max_p50_regression: number;
  max_p95_regression: number;
  max_p99_regression: number;
  max_rps_regression: number;
  max_error_increase: number;
}

export interface TrendFigures {
  name: string;
  count: number;
  rps: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  error_rate: number;
}

export interface TestTrend {
  test_id: string;
  baseline_run_id: string | null;
  runs: {
    run_id: string;
    state: RunState;
    created_at: string;
    revision: number;
    baseline: boolean;
    compared_with?: string;
    verdict?: Change;
    thresholds_failed: number;
    total: TrendFigures;
    requests: TrendFigures[];
  }[];
}

export interface TestRevision {
  revision: number;
  format: "json" | "yaml";
  sha256: string;
  size: number;
  created_at: string;
  source?: string;
}

export interface TestCheck {
  valid: boolean;
  name?: string;
  errors: FieldError[];
}

export interface Header {
  name: string;
  value: string;
}

export interface TraceEntry {
  request: string;
  method: string;
  url: string;
  request_headers: Header[];
  request_body?: string;
  status?: number;
  response_headers: Header[];
  response_body?: string;
  redirects?: { status: number; method: string; url: string }[];
  content_encoding?: string;
  decoded_bytes?: number;
  bytes_in: number;
  duration_ms: number;
  error?: string;
  vars: Record<string, string>;
  failures: string[];
}

export interface DebugResult {
  agent_id: string;
  revision: number;
  passed: boolean;
  error?: string;
  requests: TraceEntry[];
}

export interface Correlation {
  variable: string;
  value: string;
  request: string;
  seen: string;
  extractor: string;
  expression: string;
  uses: { request: string; where: string }[];
}

export interface TestImport {
  test: Test;
  requests: number;
  groups: number;
  assets_left_out: number;
  skipped: number;
  correlations: Correlation[];
  parameters: { request: string; where: string; value: string }[];
  missed: { value: string; request: string; where: string; source: string; why: string }[];
  warnings: string[];
  secrets: string[];
}

// Agents and runs.

export interface Agent {
  id: string;
  name: string;
  shared: boolean;
  state: "online" | "busy" | "offline" | "disabled";
  version: string;
  cores: number;
  sandbox: boolean;
  protocol: number;
  max_vus?: number;
  max_run_duration_seconds?: number;
  last_seen_at?: string;
  created_at: string;
}

export type RunState =
  | "created" | "queued" | "starting" | "running" | "finished" | "failed" | "canceled"
  | "timed_out" | "aborted_limit" | "aborted_threshold";

export const endedStates: RunState[] = ["finished", "failed", "canceled", "timed_out", "aborted_limit", "aborted_threshold"];

export interface RunStage {
  rate?: number;
  ramp_to?: number;
  duration_seconds: number;
}

export interface Load {
  vus?: number;
  duration_seconds?: number;
  rate?: number;
  stages?: RunStage[];
  sweep?: { vus: number[]; step_seconds: number };
}

export interface Shard {
  id: string;
  agent_id?: string;
  segment: string;
  state: string;
  reason: string;
  agent_version?: string;
  leased_at?: string;
  ended_at?: string;
}

export interface RunOutcome {
  requests: number;
  error_rate: number;
  p95_ms: number;
  thresholds_failed: number;
  generator_limited: boolean;
  incomplete: boolean;
  baseline_verdict?: Change;
}

export interface PluginPin {
  alias: string;
  name: string;
  version: string;
  kind: string;
  sha256: string;
  source?: string;
}

export interface Run {
  id: string;
  project_id: string;
  started_by: string;
  script_id: string;
  manifest: {
    script_sha256: string;
    script_name: string;
    plugins: PluginPin[];
    files: FileRef[];
    agents: { shard_id: string; agent_id?: string; version: string }[];
    warnings?: string[];
    env?: Record<string, string>;
    secrets?: string[];
    test_id?: string;
    test_revision?: number;
  };
  state: RunState;
  reason: string;
  load: Load;
  max_vus?: number;
  max_run_duration_seconds?: number;
  vus?: number;
  outcome?: RunOutcome;
  start_at?: string;
  created_at: string;
  ended_at?: string;
  shards: Shard[];
}

export interface LimitViolation {
  limit: string;
  allowed: unknown;
  requested: unknown;
  set_by?: string;
}

export interface Stability {
  cv: number;
  mean_rps: number;
  from_s: number;
  to_s: number;
  seconds: number;
  limit: number;
  unstable: boolean;
  causes?: string[];
  note?: string;
}

export interface LiveLabel {
  name: string;
  requests: number;
  rps: number;
  errors: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
}

export interface LiveSecond {
  index: number;
  elapsed_s: number;
  duration_s?: number;
  requests: number;
  rps: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  errors: Record<string, number>;
  active_vus: number;
  agents: { shard_id: string; cpu: number; active_vus: number; late: number; dropped: number }[];
  stability?: Stability;
  labels?: LiveLabel[];
  thresholds?: ThresholdResult[];
}

export interface LabelSummary {
  name: string;
  count: number;
  rps: number;
  error_rate: number;
  bytes_in: number;
  bytes_out: number;
  min_ms: number;
  mean_ms: number;
  p50_ms: number;
  p90_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface ThresholdResult {
  check: string;
  request?: string;
  abort?: boolean;
  observed: number;
  worst_window?: boolean;
  passed: boolean;
}

export interface Verdict {
  generator_limited: boolean;
  reasons?: string[];
  target_limited?: boolean;
  target_reasons?: string[];
}

export interface RunSummary {
  state?: RunState;
  reason?: string;
  incomplete?: { missing_requests: number; agents: { agent: string; state: string; reason: string; from_s: number }[] };
  elapsed_s: number;
  seconds: number;
  total: LabelSummary;
  requests: LabelSummary[];
  groups: LabelSummary[];
  errors: Record<string, number>;
  error_samples?: { label: string; class: string; message: string; count: number }[];
  checks?: { request: string; name: string; passes: number; fails: number }[];
  thresholds: ThresholdResult[];
  stability?: Stability;
  verdict: Verdict;
  agents: { shard_id: string; agent_id?: string; state: string; reason: string; requests: number; seconds: number; late_start_ms: number }[];
  /** baseline is the run held against its test's baseline when it ended. */
  baseline?: RunComparison & { run_id: string };
  /** insights are what to look at, the gravest first. */
  insights?: Insight[];
}

export interface Insight {
  kind: "lost_agent" | "generator" | "errors_from_load" | "knee" | "correlated_metric" | "dominant_request";
  title: string;
  evidence: string;
  figures?: Record<string, number>;
  from_s?: number;
  metric?: string;
}

export interface SeriesLabel {
  name: string;
  kind: string;
  count: number;
  errors: Record<string, number>;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface RunSeries {
  seconds: { index: number; labels: SeriesLabel[] }[];
}

export type Change = "improved" | "regressed" | "unchanged";

export interface FigureChange {
  metric: "rps" | "p50_ms" | "p95_ms" | "p99_ms" | "error_rate";
  base: number;
  new: number;
  change: number;
  noise: number;
  tolerance: number;
  verdict: Change;
}

export interface LabelComparison {
  name: string;
  changes: FigureChange[];
  verdict: Change;
}

export interface RunComparison {
  total: LabelComparison;
  requests: LabelComparison[];
  only?: string[];
  verdict: Change;
}

// The marketplace.

export type PluginKind = "session-element" | "url" | "source-modifier";
export type PluginVersionState = "pending" | "published" | "rejected" | "deprecated" | "revoked";

export interface PluginSummary {
  namespace: string;
  name: string;
  latest: string;
  listed: boolean;
  kinds: PluginKind[];
  description: string;
  license: string;
  source_url: string;
  tags: string[];
  protocols: number[];
  platforms: string[];
  downloads: number;
  runs: number;
  created_at: string;
  updated_at: string;
}

export interface PluginArtifact {
  os: string;
  arch: string;
  file: string;
  format: "elf" | "zipapp";
  sha256: string;
  size: number;
}

export interface PluginVersion {
  namespace: string;
  name: string;
  version: string;
  state: PluginVersionState;
  state_reason?: string;
  kinds: PluginKind[];
  description: string;
  readme: string;
  license: string;
  source_url: string;
  tags: string[];
  protocols: number[];
  config_schema: string;
  network: string[];
  artifacts: PluginArtifact[];
  shasums: string;
  signature: string;
  signer: string;
  published_by?: string;
  reviewed_at?: string;
  downloads: number;
  runs: number;
  created_at: string;
}

export interface Plugin extends PluginSummary {
  readme: string;
  versions: PluginVersion[];
}

export interface SigningKey {
  id: string;
  public_key: string;
  created_at: string;
  retired_at?: string;
}

export interface Namespace {
  name: string;
  reserved: boolean;
  reserved_reason?: string;
  owners?: string[];
  keys: SigningKey[];
  created_at: string;
}

// What admins see.

export interface InvitationUse {
  user_id: string;
  email: string;
  name: string;
  at: string;
}

export interface Invitation {
  id: string;
  role: "admin" | "user";
  license?: { plan: string; max_vus: number; max_run_duration_seconds: number; max_concurrent_runs: number; valid_days: number };
  uses_total: number;
  uses_left: number;
  expires_at: string;
  note: string;
  state: "active" | "spent" | "expired" | "revoked";
  used_by: InvitationUse[];
  created_at: string;
  revoked_at?: string;
}

export interface CreatedInvitation extends Invitation {
  code: string;
}

export interface AdminUser extends User {
  tokens: number;
  runs: number;
  last_run_at?: string;
}

export interface CreatedAgent extends Agent {
  token: string;
}

export interface PingResult {
  agent_id: string;
  round_trip_ms: number;
  state: Agent["state"];
  version: string;
}

export interface TargetSettings {
  open: string[];
  open_all: boolean;
  max_vus_per_address: number;
}
