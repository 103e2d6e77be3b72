// A run: live while it runs (its seconds as they are merged, its agents as they change), and
// once ended its results, as the HTML report has them, drawn from the API; comparing it with
// another run; a sweep's levels and its knee.
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import {
  call, endedStates, type Agent, type LabelSummary, type LiveLabel, type LiveSecond, type Page, type Run, type RunComparison,
  type RunSeries, type RunSummary, type Shard, type Stability, type Test, type ThresholdResult,
} from "../api";
import { Chart, color, type Line } from "../chart";
import { follow } from "../live";
import { Link, navigate, useTitle } from "../nav";
import { Badge, Failure, Section, Select, clock, date, ms, num, pct, useLoad, useSubmit, type Tone, Table, numeric } from "../ui";
import { RunVerdict, changeTone, loadText } from "./runs";

/** agentName names an agent by its id: its name when it is one the user may see, else the
 * start of its id. */
type AgentNames = (id?: string) => string;

function useAgentNames(): AgentNames {
  const agents = useLoad(() => call<Page<Agent>>("GET", "/v1/agents"), []);
  return (id) => {
    if (!id) return "removed";
    return agents.data?.items.find((a) => a.id === id)?.name ?? id.slice(0, 8);
  };
}

export function RunPage(props: { id: string }) {
  const run = useLoad(() => call<Run>("GET", `/v1/runs/${props.id}`), [props.id]);
  const names = useAgentNames();
  useTitle(run.data ? `Run of ${run.data.manifest.script_name}` : "Run");
  if (run.error) return <main><h1>Run</h1><Failure error={run.error} /></main>;
  const r = run.data;
  if (!r) return <main aria-busy="true" />;
  const ended = endedStates.includes(r.state);
  return (
    <main class="wide">
      <h1>
        Run of {r.manifest.test_id ? <Link href={`/tests/${r.manifest.test_id}`}>{r.manifest.script_name}</Link> : r.manifest.script_name}{" "}
        <RunVerdict state={r.state} outcome={r.outcome} />
      </h1>
      <RunFacts run={r} />
      {ended ? <Results run={r} names={names} /> : <Live run={r} names={names} onChange={(now) => run.set(now)} />}
    </main>
  );
}

function plannedSeconds(r: Run): number | undefined {
  const l = r.load;
  if (l.duration_seconds) return l.duration_seconds;
  if (l.stages) return l.stages.reduce((s, x) => s + x.duration_seconds, 0);
  if (l.sweep) return l.sweep.vus.length * l.sweep.step_seconds;
  return undefined;
}

function RunFacts(props: { run: Run }) {
  const r = props.run;
  return (
    <dl class="facts">
      <dt>State</dt>
      <dd>{r.state.replace("_", " ")}{r.reason && ` (${r.reason})`}</dd>
      <dt>Load</dt>
      <dd>{loadText(r)}</dd>
      <dt>Created</dt>
      <dd>{date(r.created_at)}</dd>
      {r.ended_at && <><dt>Ended</dt><dd>{date(r.ended_at)}</dd></>}
      <dt>Agents</dt>
      <dd>{r.shards.length}</dd>
    </dl>
  );
}

/** points is how many seconds a live chart holds at most: past them, the older half is thinned
 * to every other second, so that a long run is drawn whole and the page's memory does not
 * grow with it. */
const points = 600;

interface LiveState {
  x: number[];
  rps: number[];
  p50: number[];
  p95: number[];
  p99: number[];
  vus: number[];
  errors: Record<string, number>;
  /** count is how many seconds the page drew: one more than the last's index, with no gap
   * and none twice (the browser tests read it). */
  count: number;
  last?: LiveSecond;
  labels: Map<string, LiveLabel & { total: number; failed: number }>;
}

function emptyLive(): LiveState {
  return { x: [], rps: [], p50: [], p95: [], p99: [], vus: [], errors: {}, count: 0, labels: new Map() };
}

/** Live follows a running run; onChange is told of each change of its state, its end last. */
function Live(props: { run: Run; names: AgentNames; onChange: (r: Run) => void }) {
  const r = props.run;
  const data = useRef<LiveState>(emptyLive());
  const [, tick] = useState(0);
  const [shards, setShards] = useState<Shard[]>(r.shards);
  const [link, setLink] = useState<[boolean, string?]>([false]);
  const arrived = useRef<number | null>(null);
  useLayoutEffect(() => {
    // How long a second took from its arrival to the page updated with it, charts included
    // (before the browser paints it), as a performance measure, cleared at once so that none
    // piles up: a PerformanceObserver reads it, as scripts/bench-portal.sh does.
    if (arrived.current === null) return;
    performance.measure("barrage:live-update", { start: arrived.current });
    performance.clearMeasures("barrage:live-update");
    arrived.current = null;
  });
  useEffect(() => {
    return follow(r.id, {
      second(s) {
        arrived.current ??= performance.now();
        const d = data.current;
        d.x.push(Math.round(s.elapsed_s));
        d.rps.push(s.rps);
        d.p50.push(s.p50_ms);
        d.p95.push(s.p95_ms);
        d.p99.push(s.p99_ms);
        d.vus.push(s.active_vus);
        if (d.x.length > points) {
          const older = d.x.length - points / 2;
          for (const a of [d.x, d.rps, d.p50, d.p95, d.p99, d.vus]) a.splice(0, older, ...a.slice(0, older).filter((_, i) => i % 2 === 0));
        }
        for (const [k, v] of Object.entries(s.errors)) d.errors[k] = (d.errors[k] ?? 0) + v;
        for (const l of s.labels ?? []) {
          const was = d.labels.get(l.name);
          d.labels.set(l.name, { ...l, total: (was?.total ?? 0) + l.requests, failed: (was?.failed ?? 0) + l.errors });
        }
        d.last = s;
        d.count++;
        tick((n) => n + 1);
      },
      shard(s) {
        setShards((all) => all.map((x) => (x.id === s.id ? s : x)));
      },
      state(run) {
        setShards(run.shards);
        props.onChange(run);
      },
      end(run) {
        props.onChange(run);
      },
      connected(up, why) {
        setLink([up, why]);
      },
    });
  }, [r.id]);
  const cancel = useSubmit(async () => {
    await call<Run>("POST", `/v1/runs/${r.id}/cancel`);
  });
  const d = data.current;
  const s = d.last;
  const planned = plannedSeconds(r);
  const errorsTotal = Object.values(d.errors).reduce((a, b) => a + b, 0);
  const labels = [...d.labels.values()].sort((a, b) => a.name.localeCompare(b.name));
  return (
    <section aria-label="Live" data-seconds={d.count} data-last={s?.index ?? -1}>
      <p role="status" class="live-status">
        <Badge tone={r.state === "running" ? "good" : "neutral"}>{r.state}</Badge>{" "}
        {s ? `${clock(s.elapsed_s)} elapsed` : "waiting for the first second"}
        {s && planned ? (planned > s.elapsed_s ? `, ${clock(planned - s.elapsed_s)} to go` : ", finishing") : ""}
        {!link[0] && link[1] ? <span class="warning-inline"> · {link[1]}</span> : null}
      </p>
      <form onSubmit={cancel.submit}>
        <Failure error={cancel.error} />
        <button type="submit" class="danger" disabled={cancel.busy}>Cancel the run</button>
      </form>
      <div class="cards">
        <Figure label="Requests/s" value={num(s?.rps, 1)} />
        <Figure label="p50" value={ms(s?.p50_ms)} />
        <Figure label="p95" value={ms(s?.p95_ms)} />
        <Figure label="p99" value={ms(s?.p99_ms)} />
        <Figure label="Active VUs" value={num(s?.active_vus)} />
        <Figure label="Errors" value={num(errorsTotal)} tone={errorsTotal ? "bad" : undefined} />
      </div>
      {errorsTotal > 0 && (
        <p>Errors by class: {Object.entries(d.errors).map(([k, v]) => `${k} ${num(v)}`).join(", ")}</p>
      )}
      {s?.thresholds && (
        <ul class="verdicts" aria-label="Thresholds so far">
          {s.thresholds.map((t, i) => <li key={i}><ThresholdLine t={t} live /></li>)}
        </ul>
      )}
      {s?.stability && <StabilityLine st={s.stability} />}
      <div class="charts">
        <Chart title="Requests per second" unit="" x={d.x} lines={[{ label: "requests/s", color: color(0), values: d.rps }, { label: "active VUs", color: color(2), values: d.vus, dash: true, right: { unit: " VUs" } }]} />
        <Chart title="Response time" unit=" ms" x={d.x} lines={[
          { label: "p50", color: color(2), values: d.p50 },
          { label: "p95", color: color(0), values: d.p95 },
          { label: "p99", color: color(1), values: d.p99 },
        ]} />
      </div>
      <Section title="Agents">
        <Table caption="The run's agents" cols={["Share", "Agent", "State", numeric("CPU"), numeric("VUs"), numeric("Late starts"), numeric("Dropped")]}>
              {shards.map((sh) => {
                const h = s?.agents.find((a) => a.shard_id === sh.id);
                const tone: Tone = sh.state === "lost" || sh.state === "failed" ? "bad" : sh.state === "running" ? "good" : "neutral";
                return (
                  <tr key={sh.id}>
                    <td><code>{sh.segment}</code></td>
                    <td>{props.names(sh.agent_id)}{sh.agent_version && ` (${sh.agent_version})`}</td>
                    <td><Badge tone={tone}>{sh.state}</Badge>{sh.reason && <> {sh.reason}</>}</td>
                    <td class="n">{h ? pct(h.cpu) : "–"}</td>
                    <td class="n">{h ? num(h.active_vus) : "–"}</td>
                    <td class="n">{h ? num(h.late) : "–"}</td>
                    <td class="n">{h ? num(h.dropped) : "–"}</td>
                  </tr>
                );
              })}
        </Table>
      </Section>
      <Section title="Requests">
        {labels.length === 0 ? <p class="hint">Each request's figures appear with the first second.</p> : (
          <Table caption="Each request in the latest second, and its errors so far" cols={["Request", numeric("Requests/s"), numeric("p50"), numeric("p95"), numeric("p99"), numeric("Sent"), numeric("Errors")]}>
                {labels.map((l) => (
                  <tr key={l.name}>
                    <th scope="row">{l.name}</th>
                    <td class="n">{num(l.rps, 1)}</td>
                    <td class="n">{ms(l.p50_ms)}</td>
                    <td class="n">{ms(l.p95_ms)}</td>
                    <td class="n">{ms(l.p99_ms)}</td>
                    <td class="n">{num(l.total)}</td>
                    <td class="n">{num(l.failed)}</td>
                  </tr>
                ))}
          </Table>
        )}
      </Section>
    </section>
  );
}

function Figure(props: { label: string; value: string; tone?: Tone }) {
  return (
    <div class={`card ${props.tone ?? ""}`}>
      <div class="card-label">{props.label}</div>
      <div class="card-value">{props.value}</div>
    </div>
  );
}

function StabilityLine(props: { st: Stability }) {
  const st = props.st;
  return (
    <p>
      Throughput {st.unstable ? <Badge tone="warn">unstable</Badge> : <Badge tone="good">steady</Badge>}: it varied by {pct(st.cv)} around{" "}
      {num(st.mean_rps, 1)}/s over seconds {st.from_s} to {st.to_s} (the limit is {pct(st.limit)}).
      {st.causes && st.causes.length > 0 && <> Pointing at: {st.causes.join("; ")}.</>}
      {st.note && <> {st.note}</>}
    </p>
  );
}

/** perSecond turns a run's series into chart lines: every request's throughput together, and
 * each request's p95 (the busiest few). */
function seriesLines(series: RunSeries, dash = false, prefix = ""): { x: number[]; rps: Line; p95: Line[] } {
  const x = series.seconds.map((s) => s.index + 1);
  const rps = series.seconds.map((s) => s.labels.filter((l) => l.kind === "request").reduce((a, l) => a + l.count, 0));
  const counts = new Map<string, number>();
  for (const s of series.seconds) for (const l of s.labels) if (l.kind === "request") counts.set(l.name, (counts.get(l.name) ?? 0) + l.count);
  const names = [...counts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([n]) => n);
  const p95 = names.map((n, i) => ({
    label: prefix + n,
    color: color(i),
    dash,
    values: series.seconds.map((s) => s.labels.find((l) => l.kind === "request" && l.name === n)?.p95_ms ?? null),
  }));
  return { x, rps: { label: prefix + "requests/s", color: color(0), values: rps, dash }, p95 };
}

function LabelTable(props: { caption: string; rows: LabelSummary[]; total?: LabelSummary }) {
  return (
    <Table caption={props.caption} cols={["Name", numeric("Count"), numeric("Rate"), numeric("Errors"), numeric("Mean"), numeric("p50"), numeric("p95"), numeric("p99"), numeric("Max")]}>
          {[...props.rows, ...(props.total ? [props.total] : [])].map((l, i) => (
            <tr key={i} class={l === props.total ? "total" : undefined}>
              <th scope="row">{l === props.total ? "All requests" : l.name}</th>
              <td class="n">{num(l.count)}</td>
              <td class="n">{num(l.rps, 1)}/s</td>
              <td class="n">{pct(l.error_rate)}</td>
              <td class="n">{ms(l.mean_ms)}</td>
              <td class="n">{ms(l.p50_ms)}</td>
              <td class="n">{ms(l.p95_ms)}</td>
              <td class="n">{ms(l.p99_ms)}</td>
              <td class="n">{ms(l.max_ms)}</td>
            </tr>
          ))}
    </Table>
  );
}

function Results(props: { run: Run; names: AgentNames }) {
  const r = props.run;
  const summary = useLoad(() => call<RunSummary>("GET", `/v1/runs/${r.id}/summary`), [r.id]);
  const series = useLoad(() => call<RunSeries>("GET", `/v1/runs/${r.id}/series`), [r.id]);
  const s = summary.data;
  const lines = series.data && seriesLines(series.data);
  return (
    <>
      <p class="actions downloads">
        <a class="button secondary" href={`/v1/runs/${r.id}/report`} target="_blank" rel="noopener">HTML report</a>
        <a class="button secondary" href={`/v1/runs/${r.id}/summary`} download={`run-${r.id}.json`}>Summary (JSON)</a>
        <a class="button secondary" href={`/v1/runs/${r.id}/summary.csv`} download={`run-${r.id}.csv`}>Summary (CSV)</a>
        <a class="button secondary" href={`/v1/runs/${r.id}/series.csv`} download={`run-${r.id}-series.csv`}>Each second (CSV)</a>
      </p>
      <Failure error={summary.error} />
      {s && <Insights summary={s} />}
      {s && <Verdicts summary={s} />}
      {s && <AgainstBaseline run={r} summary={s} />}
      {lines && lines.x.length > 0 && (
        <div class="charts">
          <Chart title="Requests per second" unit="" x={lines.x} lines={[lines.rps]} />
          <Chart title="p95 response time by request" unit=" ms" x={lines.x} lines={lines.p95} />
        </div>
      )}
      {s && (
        <>
          <Section title="Requests">
            <LabelTable caption="Each request's figures" rows={s.requests} total={s.total} />
          </Section>
          {s.groups.length > 0 && (
            <Section title="Groups">
              <LabelTable caption="Each group's figures" rows={s.groups} />
            </Section>
          )}
          {s.error_samples && s.error_samples.length > 0 && (
            <Section title="Errors">
              <Table caption="The first distinct errors of each request" cols={["Request", "Class", "What happened", numeric("Count")]}>
                  {s.error_samples.map((e, i) => (
                    <tr key={i}><td>{e.label}</td><td>{e.class}</td><td>{e.message}</td><td class="n">{num(e.count)}</td></tr>
                  ))}
              </Table>
            </Section>
          )}
          {s.checks && s.checks.length > 0 && (
            <Section title="Checks">
              <Table caption="The script's assertions" cols={["Request", "Check", numeric("Passed"), numeric("Failed")]}>
                  {s.checks.map((c, i) => (
                    <tr key={i}><td>{c.request}</td><td>{c.name}</td><td class="n">{num(c.passes)}</td><td class="n">{num(c.fails)}</td></tr>
                  ))}
              </Table>
            </Section>
          )}
        </>
      )}
      {r.load.sweep && <Sweep id={r.id} />}
      <Manifest run={r} names={props.names} />
      <CompareWith run={r} />
    </>
  );
}

/** observed reads a threshold's figure in its unit: a time (in seconds) as ms, a rate, a count. */
function observed(t: ThresholdResult): string {
  if (/^\s*error_rate\b/.test(t.check)) return pct(t.observed);
  if (/^\s*(rps|count)\b/.test(t.check)) return num(t.observed, 1);
  return ms(t.observed * 1000);
}

function ThresholdLine(props: { t: ThresholdResult; live?: boolean }) {
  const t = props.t;
  return (
    <>
      <Badge tone={t.passed ? "good" : "bad"}>{t.passed ? (props.live ? "holds" : "passed") : props.live ? "broken" : "failed"}</Badge> <code>{t.check}</code>
      {t.request && ` on ${t.request}`}: {props.live ? "so far" : "observed"} {observed(t)}
      {t.worst_window && " (worst window)"}
      {t.abort && " · stops the run when broken"}
    </>
  );
}

function Verdicts(props: { summary: RunSummary }) {
  const s = props.summary;
  const v = s.verdict;
  return (
    <Section title="Verdict">
      <ul class="verdicts">
        {s.thresholds.map((t, i) => <li key={i}><ThresholdLine t={t} /></li>)}
        <li>
          {v.generator_limited ? <Badge tone="warn">generator-limited</Badge> : <Badge tone="good">load delivered</Badge>}{" "}
          {v.generator_limited ? `The generators were the bottleneck: the figures measure the tool. ${(v.reasons ?? []).join("; ")}` : "The generators delivered the load asked for."}
        </li>
        {v.target_limited && (
          <li><Badge tone="warn">target-limited</Badge> {(v.target_reasons ?? []).join("; ")}</li>
        )}
        {s.stability && <li><StabilityLine st={s.stability} /></li>}
        {s.incomplete && (
          <li>
            <Badge tone="warn">incomplete</Badge> Figures stop short for {s.incomplete.agents.map((a) => `${a.agent} (${a.state}: ${a.reason}, from second ${a.from_s})`).join("; ")}:
            up to {num(s.incomplete.missing_requests)} requests the target served are not counted.
          </li>
        )}
      </ul>
    </Section>
  );
}

function Manifest(props: { run: Run; names: AgentNames }) {
  const r = props.run;
  const m = r.manifest;
  return (
    <Section title="What ran">
      <dl class="facts">
        <dt>Script</dt>
        <dd>{m.script_name} <code title={m.script_sha256}>{m.script_sha256.slice(0, 12)}</code></dd>
        {m.test_id && <><dt>Test</dt><dd><Link href={`/tests/${m.test_id}`}>revision {m.test_revision}</Link></dd></>}
        <dt>Plugins</dt>
        <dd>{m.plugins.length === 0 ? "none" : m.plugins.map((p) => `${p.name} ${p.version} (${p.sha256.slice(0, 12)})`).join(", ")}</dd>
        <dt>Data files</dt>
        <dd>{m.files.length === 0 ? "none" : m.files.map((f) => f.name).join(", ")}</dd>
        <dt>Agents</dt>
        <dd>{m.agents.map((a) => `${props.names(a.agent_id)} ${a.version || "(not started)"}`).join(", ")}</dd>
        {m.env && Object.keys(m.env).length > 0 && <><dt>Environment</dt><dd>{Object.entries(m.env).map(([k, v]) => `${k}=${v}`).join(", ")}</dd></>}
        {m.secrets && m.secrets.length > 0 && <><dt>Secrets read</dt><dd>{m.secrets.join(", ")}</dd></>}
      </dl>
      {m.warnings && m.warnings.length > 0 && <ul class="warning">{m.warnings.map((w, i) => <li key={i}>{w}</li>)}</ul>}
    </Section>
  );
}

/** Insights lead a run's results: what to look at, each with its evidence (a lost agent's is
 * the verdicts' to say). */
function Insights(props: { summary: RunSummary }) {
  const found = (props.summary.insights ?? []).filter((i) => i.kind !== "lost_agent");
  if (found.length === 0) return null;
  return (
    <Section title="Look at">
      <ul class="warning">
        {found.map((i, n) => (
          <li key={n}><strong>{i.title}</strong>: {i.evidence}</li>
        ))}
      </ul>
    </Section>
  );
}

/** AgainstBaseline says how a run of a test did against the test's baseline, and makes a
 * finished run the baseline. */
function AgainstBaseline(props: { run: Run; summary: RunSummary }) {
  const r = props.run;
  const b = props.summary.baseline;
  const testID = r.manifest.test_id;
  const test = useLoad(() => (testID ? call<Test>("GET", `/v1/tests/${testID}`) : Promise.resolve(null)), [testID]);
  const mark = useSubmit(async () => {
    await call("PUT", `/v1/tests/${testID}/baseline`, { run_id: r.id });
    test.reload();
  });
  if (!testID) return null;
  const isBaseline = test.data?.baseline?.run_id === r.id;
  const regressions = b ? [b.total, ...b.requests].flatMap((l) => l.changes.filter((c) => c.verdict === "regressed").map((c) => `${metricNames[c.metric].toLowerCase()} of ${l === b.total ? "all requests" : l.name}`)) : [];
  return (
    <Section title="Baseline">
      {b && (
        <p role="status">
          Against the test's baseline (<Link href={`/runs/${b.run_id}`}>its run</Link>): <Badge tone={changeTone(b.verdict)}>{b.verdict}</Badge>
          {regressions.length > 0 && ` (${regressions.join(", ")})`}.{" "}
          <Link href={`/runs/${r.id}/compare?base=${b.run_id}`}>The comparison, figure by figure</Link>
        </p>
      )}
      {/* A run held against a baseline may be made the baseline in its turn: both are said. */}
      {isBaseline && <p>This run is the test's baseline: its later runs are held against it.</p>}
      {!b && !isBaseline && <p>This run was not held against a baseline.</p>}
      {r.state === "finished" && test.data && !isBaseline && (
        <form onSubmit={mark.submit}>
          <p class="hint">The test's runs that finish from now on are compared with its baseline, and the verdict kept with each.</p>
          <Failure error={mark.error} />
          <button type="submit" class="secondary" disabled={mark.busy}>Make this run the test's baseline</button>
        </form>
      )}
    </Section>
  );
}

function CompareWith(props: { run: Run }) {
  const r = props.run;
  const q = r.manifest.test_id ? `?test_id=${r.manifest.test_id}&limit=50` : "?limit=50";
  const others = useLoad(() => call<Page<Run>>("GET", `/v1/runs${q}`), [r.id]);
  const choices = (others.data?.items ?? []).filter((o) => o.id !== r.id && endedStates.includes(o.state));
  const [base, setBase] = useState("");
  if (choices.length === 0) return null;
  return (
    <Section title="Compare">
      <form class="inline" onSubmit={(e) => { e.preventDefault(); navigate(`/runs/${r.id}/compare?base=${base || choices[0].id}`); }}>
        <Select label="Base run" value={base || choices[0].id} onChange={setBase}
          options={choices.map((o): [string, string] => [o.id, `${date(o.created_at)}: ${o.manifest.script_name}, ${loadText(o)}`])} />
        <button type="submit">Compare with it</button>
      </form>
    </Section>
  );
}

interface SweepResult {
  levels: { vus: number; rps: number; ok_rps: number; p95_ms: number; error_rate: number; stopped?: string }[];
  fit?: { Lambda: number; Sigma: number; Kappa: number; R2: number };
  fit_error?: string;
  peak_vus?: number;
  peak_rps?: number;
  knee_vus?: number;
}

function Sweep(props: { id: string }) {
  const sw = useLoad(() => call<SweepResult>("GET", `/v1/runs/${props.id}/sweep`), [props.id]);
  const d = sw.data;
  const f = d?.fit;
  const usl = (n: number) => (f ? (f.Lambda * n) / (1 + f.Sigma * (n - 1) + f.Kappa * n * (n - 1)) : null);
  // The levels, and 50 steps between the first and the last, along which the fit is drawn.
  const vus = d?.levels.map((l) => l.vus) ?? [];
  const lo = Math.min(...vus, 1);
  const hi = Math.max(...vus, 1);
  const x = [...new Set([...vus, ...Array.from({ length: 51 }, (_, i) => lo + ((hi - lo) * i) / 50)])].sort((a, b) => a - b);
  return (
    <Section title="Sweep">
      <Failure error={sw.error} />
      {d && (
        <>
          <p>
            {d.knee_vus
              ? `The knee is at ${d.knee_vus} VUs: at the next level, successful throughput grew by less than a quarter as much as the VUs did, while p95 grew by more: added VUs mostly waited.`
              : "No knee within the levels: throughput kept growing with the VUs, or p95 did not climb."}{" "}
            {f ? `The Universal Scalability Law fits with R² ${f.R2.toFixed(3)}${d.peak_vus ? `, predicting a peak of ${num(d.peak_rps, 1)}/s at ${num(d.peak_vus)} VUs` : ""}.` : d.fit_error}
          </p>
          <Chart title="Successful requests/s by VUs" unit="" xUnit=" VUs" xWhole x={x} lines={[
            { label: "measured", color: color(0), points: true, values: x.map((n) => d.levels.find((l) => l.vus === n)?.ok_rps ?? null) },
            ...(f ? [{ label: "fitted", color: color(1), dash: true, values: x.map(usl) }] : []),
          ]} />
          <Table caption="The sweep's levels" cols={[numeric("VUs"), numeric("Requests/s"), numeric("Successful/s"), numeric("p95"), numeric("Errors"), "Note"]}>
              {d.levels.map((l) => (
                <tr key={l.vus}><td class="n">{l.vus}</td><td class="n">{num(l.rps, 1)}</td><td class="n">{num(l.ok_rps, 1)}</td><td class="n">{ms(l.p95_ms)}</td><td class="n">{pct(l.error_rate)}</td><td>{l.stopped}</td></tr>
              ))}
          </Table>
          <a href={`/v1/runs/${props.id}/sweep.csv`} download>Levels (CSV)</a>
        </>
      )}
    </Section>
  );
}

const metricNames: Record<string, string> = { rps: "Requests/s", p50_ms: "p50", p95_ms: "p95", p99_ms: "p99", error_rate: "Error rate" };


export function ComparePage(props: { id: string; base: string }) {
  useTitle("Compare runs");
  const cmp = useLoad(() => call<RunComparison>("GET", `/v1/runs/${props.id}/compare?base=${encodeURIComponent(props.base)}`), [props.id, props.base]);
  const baseID = encodeURIComponent(props.base);
  const runs = useLoad(() => Promise.all([call<Run>("GET", `/v1/runs/${baseID}`), call<Run>("GET", `/v1/runs/${props.id}`)]), [props.id, props.base]);
  const series = useLoad(() => Promise.all([call<RunSeries>("GET", `/v1/runs/${baseID}/series`), call<RunSeries>("GET", `/v1/runs/${props.id}/series`)]), [props.id, props.base]);
  const c = cmp.data;
  const [base, now] = runs.data ?? [];
  const fmt = (metric: string, v: number) => (metric === "rps" ? num(v, 1) : metric === "error_rate" ? pct(v) : ms(v));
  const chg = (metric: string, v: number) => (metric === "error_rate" ? `${(v * 100).toFixed(2)} pt` : `${v > 0 ? "+" : ""}${(v * 100).toFixed(1)}%`);
  let charts = null;
  if (series.data) {
    const [b, n] = series.data;
    const lb = seriesLines(b, true, "base ");
    const ln = seriesLines(n, false, "new ");
    const len = Math.max(lb.x.length, ln.x.length);
    const x = Array.from({ length: len }, (_, i) => i + 1);
    const pad = (v: (number | null)[]) => Array.from({ length: len }, (_, i) => v[i] ?? null);
    charts = (
      <div class="charts">
        <Chart title="Requests per second, both runs" unit="" x={x} lines={[{ ...ln.rps, values: pad(ln.rps.values) }, { ...lb.rps, color: color(1), values: pad(lb.rps.values) }]} />
        <Chart title="p95 response time, both runs" unit=" ms" x={x} lines={[...ln.p95.slice(0, 3), ...lb.p95.slice(0, 3)].map((l) => ({ ...l, values: pad(l.values) }))} />
      </div>
    );
  }
  return (
    <main class="wide">
      <h1>Compare runs</h1>
      <Failure error={cmp.error || runs.error} />
      {base && now && (
        <p>
          <Link href={`/runs/${now.id}`}>This run</Link> ({date(now.created_at)}, {loadText(now)}) against the base{" "}
          <Link href={`/runs/${base.id}`}>run of {date(base.created_at)}</Link> ({loadText(base)}).
        </p>
      )}
      {base && now && (loadText(base) !== loadText(now) || base.state !== "finished" || now.state !== "finished") && (
        <p class="warning" role="note">
          {loadText(base) !== loadText(now) && "The two runs asked for different loads: their figures differ for that reason too. "}
          {[base, now].filter((r) => r.state !== "finished").map((r) => `The ${r === base ? "base" : "new"} run ended ${r.state.replace("_", " ")}, not finished. `)}
          Compare runs of the same load that ran to their end to judge a change of the target.
        </p>
      )}
      {c && (
        <>
          <p role="status">Overall: <Badge tone={changeTone(c.verdict)}>{c.verdict}</Badge></p>
          {charts}
          <Table caption="Each request's figures in both runs" cols={["Request", "Figure", numeric("Base"), numeric("This run"), numeric("Change"), numeric("Noise"), "Verdict"]}>
                {[c.total, ...c.requests].flatMap((l) =>
                  l.changes.map((f, i) => (
                    <tr key={l.name + f.metric}>
                      {i === 0 && <th scope="rowgroup" rowSpan={l.changes.length}>{l === c.total ? "All requests" : l.name} <Badge tone={changeTone(l.verdict)}>{l.verdict}</Badge></th>}
                      <td>{metricNames[f.metric]}</td>
                      <td class="n">{fmt(f.metric, f.base)}</td>
                      <td class="n">{fmt(f.metric, f.new)}</td>
                      <td class="n">{chg(f.metric, f.change)}</td>
                      <td class="n">±{chg(f.metric, f.noise).replace("+", "")}</td>
                      <td><Badge tone={changeTone(f.verdict)}>{f.verdict}</Badge></td>
                    </tr>
                  )),
                )}
          </Table>
          {c.only && c.only.length > 0 && <p>Made by one run only: {c.only.join(", ")}.</p>}
        </>
      )}
    </main>
  );
}
