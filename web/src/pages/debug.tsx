// Debugging a test: one traced iteration on an agent, shown as a browser's network panel shows
// a page's requests: each exchange's status, time and size, and once picked its headers, bodies,
// redirects, the variables it extracted and the assertions it failed.
import { useState } from "preact/hooks";
import { call, type Agent, type DebugResult, type Page, type Test, type TraceEntry } from "../api";
import { Link, useTitle } from "../nav";
import { jsonPath, type Pick } from "../wizard/model";
import { Badge, Failure, RevisionSelect, Select, ms, size, useLoad, useSubmit, Table, numeric } from "../ui";

/** reachable are the agents a debug can go to now (a busy one too: it runs a debug beside its
 * load), the user's own first. */
function reachable(agents: Agent[]): Agent[] {
  return agents.filter((a) => a.state === "online" || a.state === "busy").sort((a, b) => Number(a.shared) - Number(b.shared));
}

export function DebugPage(props: { id: string }) {
  const test = useLoad(() => call<Test>("GET", `/v1/tests/${props.id}`), [props.id]);
  const agents = useLoad(() => call<Page<Agent>>("GET", "/v1/agents"), []);
  useTitle(`Debug ${test.data?.name ?? "test"}`);
  const [agent, setAgent] = useState("");
  const [revision, setRevision] = useState("");
  const [result, setResult] = useState<DebugResult | null>(null);
  const run = useSubmit(async () => {
    setResult(null);
    const body: { agent_id?: string; revision?: number } = {};
    if (agent) body.agent_id = agent;
    if (revision) body.revision = Number(revision);
    setResult(await call<DebugResult>("POST", `/v1/tests/${props.id}/debug`, body));
  });
  const t = test.data;
  const online = reachable(agents.data?.items ?? []);
  return (
    <main class="wide">
      <h1>Debug {t?.name}</h1>
      <Failure error={test.error || agents.error} />
      <p class="hint">
        One virtual user runs one iteration of the test on an agent, and every request and response is shown here.
        Nothing is measured or kept.
      </p>
      <form onSubmit={run.submit} class="inline">
        <Select label="Agent" value={agent} onChange={setAgent}
          options={[["", online.length ? "The first online agent" : "No agent is online"], ...online.map((a): [string, string] => [a.id, `${a.name}${a.shared ? " (shared)" : ""}${a.state === "busy" ? ", busy" : ""}`])]} />
        {t && (
          <RevisionSelect latest={t.latest_revision} value={revision} onChange={setRevision} />
        )}
        <button type="submit" disabled={run.busy}>{run.busy ? "Running…" : "Run one iteration"}</button>
      </form>
      <Failure error={run.error} />
      {result && <Trace result={result} />}
      {t && (
        <p class="actions">
          <Link class="button secondary" href={`/tests/${t.id}/edit`}>Edit the script</Link>
          <Link class="button secondary" href={`/tests/${t.id}/run`}>Run it as load</Link>
        </p>
      )}
    </main>
  );
}

function statusTone(e: TraceEntry) {
  if (e.error || e.status === undefined || e.failures.length) return "bad" as const;
  return e.status >= 400 ? ("warn" as const) : ("good" as const);
}

/** Trace shows a debug's iteration; with onPick, a response's status, headers and JSON values
 * each offer to be extracted or asserted, and onPick is told which. */
export function Trace(props: { result: DebugResult; onPick?: (p: Pick) => void }) {
  const r = props.result;
  const [picked, setPicked] = useState(0);
  const e = r.requests[picked];
  return (
    <section aria-label="The iteration">
      <p role="status">
        {r.passed ? <Badge tone="good">passed</Badge> : <Badge tone="bad">failed</Badge>}{" "}
        Revision {r.revision}: {r.requests.length} request{r.requests.length === 1 ? "" : "s"}.
        {r.error && <span class="error"> The iteration stopped: {r.error}</span>}
      </p>
      <div class="network">
        <Table caption="Requests of the iteration" cols={["#", "Request", "Status", numeric("Time"), numeric("Size")]}>
              {r.requests.map((x, i) => (
                <tr key={i} class={i === picked ? "picked" : undefined}>
                  <td>{i + 1}</td>
                  <td>
                    <button type="button" class="link" aria-pressed={i === picked} onClick={() => setPicked(i)}>
                      {x.request}
                    </button>
                    <br />
                    <small><code>{x.method} {x.url}</code></small>
                  </td>
                  <td><Badge tone={statusTone(x)}>{x.status ?? "no response"}</Badge>{x.failures.length > 0 && " ✗"}</td>
                  <td class="n">{ms(x.duration_ms)}</td>
                  <td class="n">{size(x.bytes_in)}</td>
                </tr>
              ))}
        </Table>
        {e && <Exchange entry={e} onPick={props.onPick} />}
      </div>
    </section>
  );
}

/** pretty indents a JSON body, and leaves any other as it came. */
export function pretty(body: string, headers: { name: string; value: string }[]): string {
  const type = headers.find((h) => h.name.toLowerCase() === "content-type")?.value ?? "";
  if (type.includes("json") || /^\s*[{[]/.test(body)) {
    try {
      return JSON.stringify(JSON.parse(body), null, 2);
    } catch {
      return body; // a preview cut at 4 KiB, or not JSON after all
    }
  }
  return body;
}

/** Headers lists headers; with onExtract, each offers to be extracted. */
function Headers(props: { title: string; headers: { name: string; value: string }[]; onExtract?: (name: string) => void }) {
  const extract = props.onExtract;
  return (
    <>
      <h3>{props.title}</h3>
      {props.headers.length === 0 ? <p class="hint">None.</p> : (
        <dl class="headers">
          {props.headers.map((h, i) => (
            <div key={i}>
              <dt>{h.name}</dt>
              <dd>
                {h.value}
                {extract && <> <PickButton as="Extract" what={`header ${h.name}`} onClick={() => extract(h.name)} /></>}
              </dd>
            </div>
          ))}
        </dl>
      )}
    </>
  );
}

/** PickButton offers to extract or assert what (a header's name, a JSON path), telling onPick. */
function PickButton(props: { as: "Extract" | "Assert"; what: string; onClick: () => void }) {
  return (
    <button type="button" class="secondary small" aria-label={`${props.as} ${props.what}`} onClick={props.onClick}>
      {props.as}
    </button>
  );
}

/** JSONTree shows a JSON value as a tree, each leaf with its Extract and Assert buttons. */
function JSONTree(props: { value: unknown; path: string; pick: (as: "extract" | "assert", path: string, value: unknown) => void }) {
  const v = props.value;
  if (v === null || typeof v !== "object") {
    return (
      <span class="leaf">
        <code>{JSON.stringify(v)}</code>{" "}
        <PickButton as="Extract" what={props.path} onClick={() => props.pick("extract", props.path, v)} />{" "}
        <PickButton as="Assert" what={props.path} onClick={() => props.pick("assert", props.path, v)} />
      </span>
    );
  }
  const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
  if (entries.length === 0) return <code>{Array.isArray(v) ? "[]" : "{}"}</code>;
  return (
    <ul class="tree">
      {entries.map(([k, x]) => (
        <li key={k}>
          <code class="key">{typeof k === "number" ? `[${k}]` : k}:</code>{" "}
          <JSONTree value={x} path={jsonPath(props.path, k)} pick={props.pick} />
        </li>
      ))}
    </ul>
  );
}

/** json is body as JSON, when it is whole JSON (a preview cut short is not). */
function json(body: string): { value: unknown } | undefined {
  try {
    return { value: JSON.parse(body) };
  } catch {
    return undefined;
  }
}

function Exchange(props: { entry: TraceEntry; onPick?: (p: Pick) => void }) {
  const e = props.entry;
  const onPick = props.onPick;
  const body = onPick && e.response_body ? json(e.response_body) : undefined;
  const vars = Object.entries(e.vars);
  return (
    <article class="exchange" aria-label={`Request ${e.request}`}>
      <h2>{e.request}</h2>
      <p><code>{e.method} {e.url}</code></p>
      {e.error && <p class="error">{e.error}</p>}
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          {e.status ?? "no response"}
          {onPick && e.status !== undefined && (
            <> <PickButton as="Assert" what={`status ${e.status}`} onClick={() => onPick({ request: e.request, as: "assert", status: e.status! })} /></>
          )}
        </dd>
        <dt>Time</dt>
        <dd>{ms(e.duration_ms)}</dd>
        <dt>Received</dt>
        <dd>
          {size(e.bytes_in)}
          {e.content_encoding && `, ${e.content_encoding}, ${size(e.decoded_bytes ?? 0)} decoded`}
        </dd>
      </dl>
      {e.failures.length > 0 && (
        <>
          <h3>Assertions that failed</h3>
          <ul class="error">{e.failures.map((f, i) => <li key={i}>{f}</li>)}</ul>
        </>
      )}
      {vars.length > 0 && (
        <>
          <h3>Variables extracted</h3>
          <dl class="headers">
            {vars.map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
        </>
      )}
      {e.redirects && e.redirects.length > 0 && (
        <>
          <h3>Redirects followed</h3>
          <ol>{e.redirects.map((r, i) => <li key={i}>{r.status} → <code>{r.method} {r.url}</code></li>)}</ol>
        </>
      )}
      <Headers title="Request headers" headers={e.request_headers} />
      {e.request_body && (
        <>
          <h3>Request body</h3>
          <pre class="body" tabIndex={0}>{pretty(e.request_body, e.request_headers)}</pre>
        </>
      )}
      <Headers title="Response headers" headers={e.response_headers}
        onExtract={onPick && ((name) => onPick({ request: e.request, as: "extract", header: name }))} />
      {e.response_body && (
        <>
          <h3>Response body</h3>
          {body && onPick ? (
            <div class="body" tabIndex={0}>
              <JSONTree value={body.value} path="$" pick={(as, json, value) => onPick({ request: e.request, as, json, value })} />
            </div>
          ) : (
            <pre class="body" tabIndex={0}>{pretty(e.response_body, e.response_headers)}</pre>
          )}
        </>
      )}
    </article>
  );
}
