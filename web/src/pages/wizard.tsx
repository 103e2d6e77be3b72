// The test wizard, for people who do not write YAML: a form of the script's groups, requests
// and load, checked by the server as it is filled in and saved as YAML; once saved, a debugged
// response's values are picked to extract or assert. wizard/model.ts makes the form from the
// script and the script from the form.
import { useEffect, useMemo, useState } from "preact/hooks";
import { call, type DebugResult, type Test, type TestRevision } from "../api";
import { Link, navigate, useTitle } from "../nav";
import { Failure, Field, Section, Select, TextArea, useLoad, useSubmit } from "../ui";
import {
  applyPick, assertionKinds, extractorKinds, fieldPaths, methods, moveAt, newAssertion, newBody, newRequest, placeErrors,
  removeAt, replaceAt, starter, toModel, toScript, unsupported,
  type AssertionKind, type AssertionModel, type BodyKind, type ExtractorKind, type ExtractorModel, type GroupModel, type LoadKind,
  type LoadModel, type Model, type Pick, type RequestModel, type Row,
} from "../wizard/model";
import { parse, yamlOf } from "../wizard/source";
import { SaveActions, saveScript, scriptErrors, useCheck } from "./editor";
import { Trace } from "./debug";
import { PluginPicker } from "./pluginpicker";

/** WizardPage edits test id's latest revision in the wizard, or makes a new test. */
export function WizardPage(props: { id?: string }) {
  const id = props.id;
  const [saved, setSaved] = useState("");
  const loaded = useLoad(async () => {
    if (!id) return { test: undefined as Test | undefined, parsed: { script: starter as unknown, comments: false, error: undefined as string | undefined } };
    const test = await call<Test>("GET", `/v1/tests/${id}`);
    const rev = await call<TestRevision>("GET", `/v1/tests/${id}/revisions/${test.latest_revision}`);
    return { test, parsed: parse(rev.source ?? "") };
  }, [id]);
  const t = loaded.data?.test;
  useTitle(t ? `${t.name} in the wizard` : "New test in the wizard");
  if (loaded.error) return <main><h1>Wizard</h1><Failure error={loaded.error} /></main>;
  if (!loaded.data) return <main aria-busy="true" />;
  const p = loaded.data.parsed;
  const why = p.error ? `The script does not read as YAML or JSON: ${p.error}` : unsupported(p.script);
  if (why) {
    return (
      <main>
        <h1>{t?.name ?? "Wizard"}</h1>
        <p>{why} The script editor shows the whole script.</p>
        <p class="actions">
          {t && <Link class="button" href={`/tests/${t.id}/edit`}>Edit the script</Link>}
          {t && <Link class="button secondary" href={`/tests/${t.id}`}>Back to the test</Link>}
        </p>
      </main>
    );
  }
  return (
    <Wizard key={t?.latest_revision ?? 0} test={t} initial={toModel(p.script as Record<string, unknown>)} comments={p.comments} saved={saved}
      onSaved={(rev) => { setSaved(`Saved revision ${rev}.`); loaded.reload(); }} />
  );
}

/** Errs is the reason against the field at a path (session.groups[0].name), if any. */
type Errs = (path: string) => string | undefined;

/** domID is the id of the element showing the field at path. */
function domID(path: string): string {
  return "w-" + path.replace(/[^A-Za-z0-9]+/g, "-");
}

function Wizard(props: { test?: Test; initial: Model; comments: boolean; saved: string; onSaved: (revision: number) => void }) {
  const t = props.test;
  const [model, setModel] = useState(props.initial);
  const [focus, setFocus] = useState({ path: "", n: 0 });
  const [pickError, setPickError] = useState("");
  const { script, problems } = useMemo(() => toScript(model), [model]);
  const yaml = useMemo(() => yamlOf(script), [script]);
  const [savedYAML] = useState(yaml);
  const { check, error: checkError, checking } = useCheck(yaml);
  const save = useSubmit(async () => {
    if (problems.size) throw new Error("Correct what is marked in the form first.");
    const s = await saveScript(t, model.name, yaml);
    if (t) props.onSaved(s.latest_revision);
    else navigate(`/tests/${s.id}/wizard`, true);
  });
  useEffect(() => {
    if (!focus.path) return;
    const el = document.getElementById(domID(focus.path));
    el?.scrollIntoView({ block: "center" });
    el?.querySelector<HTMLElement>("input, select, textarea")?.focus({ preventScroll: true });
  }, [focus]);

  // A line of the YAML the form writes means nothing in the form.
  const server = scriptErrors(save.error, check).map((e) => ({ ...e, reason: e.reason.replace(/ \(line \d+\)$/, "") }));
  const mine = [...problems].map(([field, reason]) => ({ field, reason }));
  const { at, rest } = placeErrors([...mine, ...server], fieldPaths(model));
  const errs: Errs = (path) => at.get(path)?.join("; ");
  const count = mine.length + server.length;
  const status = checking ? "Checking…" : count === 0 && check?.valid ? "The script is valid." : count ? `${count} error${count === 1 ? "" : "s"}` : "";

  const setGroups = (groups: GroupModel[]) => setModel({ ...model, groups });
  function pick(p: Pick) {
    const r = applyPick(model, p);
    if (!r) {
      setPickError(`No request of the form is named ${p.request}: save the test and debug it again.`);
      return;
    }
    setPickError("");
    setModel(r.model);
    setFocus({ path: `session.groups[${r.at.g}].requests[${r.at.r}].${r.at.list}[${r.at.i}]`, n: focus.n + 1 });
  }
  return (
    <main class="wide">
      <h1>{t ? `${t.name} in the wizard` : "A new test in the wizard"}</h1>
      <p class="hint">
        {t ? `Saving makes revision ${t.latest_revision + 1}.` : "Saving makes the test's revision 1."} The server checks the test as you fill it in.{" "}
        {t && <Link href={`/tests/${t.id}/edit`}>Edit the script as YAML</Link>}
      </p>
      <form class="wizard" onSubmit={save.submit}>
        <ul class="errors" aria-label="Errors in the test">
          {rest.map((e, i) => (
            <li key={i}>
              {e.field && <code>{e.field}</code>}
              {e.field ? ": " : ""}
              {e.reason}
            </li>
          ))}
        </ul>
        <div class="row">
          <Field label="Test name" value={model.name} maxLength={200} error={errs("name")} required
            onInput={(e) => setModel({ ...model, name: (e.target as HTMLInputElement).value })} />
          <Field label="Base URL" hint="Optional: a URL starting with / is appended to it." value={model.baseURL} error={errs("base_url")}
            placeholder="e.g. http://127.0.0.1:8081" onInput={(e) => setModel({ ...model, baseURL: (e.target as HTMLInputElement).value })} />
        </div>
        <h2>Groups</h2>
        <p class="hint">A virtual user runs the groups in order, and each group's requests in order; a group is measured as a whole too.</p>
        {model.groups.map((g, gi) => (
          <GroupEditor key={gi} group={g} at={`session.groups[${gi}]`} errs={errs} first={gi === 0} last={gi === model.groups.length - 1}
            onChange={(next) => setGroups(replaceAt(model.groups, gi, () => next))}
            onMove={(by) => setGroups(moveAt(model.groups, gi, by))}
            onRemove={() => setGroups(removeAt(model.groups, gi))} />
        ))}
        <button type="button" class="secondary" onClick={() => {
          const n = model.groups.length + 1;
          setGroups([...model.groups, { name: `group ${n}`, think: "", requests: [newRequest(`request ${n}.1`, "/")], src: {} }]);
        }}>Add a group</button>
        <Plugins model={model} errs={errs} onChange={setModel} />
        <h2>Load</h2>
        <LoadEditor load={model.load} errs={errs} onChange={(load) => setModel({ ...model, load })} />
        {props.comments && <p class="warning">Saving from the wizard drops the script's comments.</p>}
        <p class="hint" role="status">{props.saved}{props.saved && " "}{status}</p>
        <SaveActions test={t} checkError={checkError} save={save} />
      </form>
      {t ? (
        <DebugPanel test={t} unsaved={yaml !== savedYAML} onPick={pick} pickError={pickError} />
      ) : (
        <p class="hint">Once the test is saved, debug it here and pick from its responses what to extract or assert.</p>
      )}
    </main>
  );
}

/** Plugins lists the marketplace plugins the test uses and adds one: the wizard keeps each as
 * the script has it. */
function Plugins(props: { model: Model; errs: Errs; onChange: (m: Model) => void }) {
  const m = props.model;
  const list = Array.isArray(m.src.plugins) ? (m.src.plugins as Record<string, unknown>[]) : [];
  const set = (plugins: unknown[]) => {
    const { plugins: _, ...rest } = m.src;
    props.onChange({ ...m, src: plugins.length ? { ...rest, plugins } : rest });
  };
  return (
    <>
      <h2>Plugins</h2>
      {list.length === 0 ? <p class="hint">None: a plugin from the marketplace can make up data, sign requests or change the test.</p> : (
        <ul class="plain">
          {list.map((p, i) => (
            <li key={i}>
              <code>{String(p.use ?? p.path ?? "")}</code> as <code>{String(p.as ?? "")}</code> ({String(p.kind ?? "")})
              {props.errs(`plugins[${i}]`) && <span class="error"> {props.errs(`plugins[${i}]`)}</span>}{" "}
              <button type="button" class="secondary small" aria-label={`Remove the plugin ${String(p.as ?? i)}`} onClick={() => set(removeAt(list, i))}>Remove</button>
            </li>
          ))}
        </ul>
      )}
      <PluginPicker taken={list.map((p) => String(p.as ?? ""))} onAdd={(u) => {
        const entry: Record<string, unknown> = { use: u.use, as: u.as, kind: u.kind };
        if (u.network?.length) entry.network = u.network;
        if (u.config !== undefined) entry.config = u.config;
        set([...list, entry]);
      }} />
    </>
  );
}

/** DebugPanel runs one iteration of the test's saved revision, and offers its responses'
 * values to pick. */
function DebugPanel(props: { test: Test; unsaved: boolean; onPick: (p: Pick) => void; pickError: string }) {
  const [result, setResult] = useState<DebugResult | null>(null);
  const run = useSubmit(async () => {
    setResult(null);
    setResult(await call<DebugResult>("POST", `/v1/tests/${props.test.id}/debug`, {}));
  });
  return (
    <Section title="Debug this test">
      <p class="hint">
        One virtual user runs one iteration of revision {props.test.latest_revision} on an agent. Pick a value of a response
        to extract it into a variable or to assert it: it is added to its request above.
      </p>
      {props.unsaved && <p class="warning">The form has changes that are not saved: the debug runs the saved revision.</p>}
      <form class="inline" onSubmit={run.submit}>
        <button type="submit" disabled={run.busy}>{run.busy ? "Running…" : "Run one iteration"}</button>
      </form>
      <Failure error={run.error} />
      {props.pickError && <p class="error" role="alert">{props.pickError}</p>}
      {result && <Trace result={result} onPick={props.onPick} />}
    </Section>
  );
}

/** Moves are a list entry's buttons: up, down, remove, each naming what it moves. */
function Moves(props: { what: string; first: boolean; last: boolean; onMove: (by: -1 | 1) => void; onRemove?: () => void }) {
  return (
    <p class="actions">
      <button type="button" class="secondary small" disabled={props.first} aria-label={`Move ${props.what} up`} onClick={() => props.onMove(-1)}>Up</button>
      <button type="button" class="secondary small" disabled={props.last} aria-label={`Move ${props.what} down`} onClick={() => props.onMove(1)}>Down</button>
      {props.onRemove && <button type="button" class="secondary small" aria-label={`Remove ${props.what}`} onClick={props.onRemove}>Remove</button>}
    </p>
  );
}

/** Note shows the reasons against a whole group, request or entry. */
function Note(props: { error?: string }) {
  return props.error ? <p class="error">{props.error}</p> : null;
}

function GroupEditor(props: {
  group: GroupModel; at: string; errs: Errs; first: boolean; last: boolean;
  onChange: (g: GroupModel) => void; onMove: (by: -1 | 1) => void; onRemove: () => void;
}) {
  const g = props.group;
  const set = (requests: RequestModel[]) => props.onChange({ ...g, requests });
  return (
    <fieldset class="group" id={domID(props.at)}>
      <legend>Group {g.name}</legend>
      <Note error={props.errs(props.at)} />
      <div class="row">
        <Field label="Group name" value={g.name} required error={props.errs(`${props.at}.name`)}
          onInput={(e) => props.onChange({ ...g, name: (e.target as HTMLInputElement).value })} />
        <Field label="Think time after the group" hint={thinkHint(g.src.think)} value={g.think} placeholder="e.g. 2s" error={props.errs(`${props.at}.think`)}
          onInput={(e) => props.onChange({ ...g, think: (e.target as HTMLInputElement).value })} />
      </div>
      {g.requests.map((r, ri) => (
        <RequestEditor key={ri} request={r} at={`${props.at}.requests[${ri}]`} errs={props.errs} first={ri === 0} last={ri === g.requests.length - 1}
          onChange={(next) => set(replaceAt(g.requests, ri, () => next))}
          onMove={(by) => set(moveAt(g.requests, ri, by))}
          onRemove={() => set(removeAt(g.requests, ri))} />
      ))}
      <p class="actions">
        <button type="button" class="secondary" onClick={() => set([...g.requests, newRequest(`${g.name} ${g.requests.length + 1}`, "/")])}>
          Add a request to {g.name}
        </button>
      </p>
      <Moves what={`group ${g.name}`} first={props.first} last={props.last} onMove={props.onMove} onRemove={props.onRemove} />
    </fieldset>
  );
}

/** thinkHint says what a think time given as a mapping is, which the wizard keeps until a time
 * is typed in its place. */
function thinkHint(think: unknown): string {
  return typeof think === "object" && think !== null
    ? `Kept as written (${JSON.stringify(think)}) unless a time is typed here.`
    : "Optional: 2s, 500ms.";
}

function RequestEditor(props: {
  request: RequestModel; at: string; errs: Errs; first: boolean; last: boolean;
  onChange: (r: RequestModel) => void; onMove: (by: -1 | 1) => void; onRemove: () => void;
}) {
  const r = props.request;
  const at = props.at;
  const errs = props.errs;
  const set = (patch: Partial<RequestModel>) => props.onChange({ ...r, ...patch });
  const b = r.body;
  const bodyKinds: [BodyKind, string][] = [["none", "None"], ["json", "JSON"], ["form", "Form fields"], ["raw", "Raw, with its content type"]];
  if (b.kind === "kept" || "file" in b.src || "multipart" in b.src) bodyKinds.push(["kept", "As written in the script (a file or multipart)"]);
  return (
    <fieldset class="request" id={domID(at)}>
      <legend>Request {r.name}</legend>
      <Note error={errs(at)} />
      <div class="row">
        <Field label="Request name" hint="Unique in the test: it labels the request's figures." value={r.name} required error={errs(`${at}.name`)}
          onInput={(e) => set({ name: (e.target as HTMLInputElement).value })} />
        <Select label="Method" value={r.method} options={methods.map((m): [string, string] => [m, m])} error={errs(`${at}.method`)}
          onChange={(method) => set({ method })} />
      </div>
      <Field label="URL" value={r.url} required error={errs(`${at}.url`)} placeholder="e.g. /api/products" inputMode="url"
        onInput={(e) => set({ url: (e.target as HTMLInputElement).value })} />
      <Rows title="Headers" noun="header" rows={r.headers} error={errs(`${at}.headers`)} onChange={(headers) => set({ headers })} />
      <Select label="Body" value={b.kind} options={bodyKinds} error={b.kind === "json" ? undefined : errs(`${at}.body`)}
        onChange={(k) => set({ body: { ...newBody(k as BodyKind), src: b.src } })} />
      {b.kind === "json" && (
        <TextArea label="JSON body" value={b.json} rows={6} spellcheck={false} class="code" error={errs(`${at}.body`)}
          hint={'Any JSON value; variables go inside strings: "${product_id}".'}
          onInput={(e) => set({ body: { ...b, json: (e.target as HTMLTextAreaElement).value } })} />
      )}
      {b.kind === "form" && <Rows title="Form fields" noun="form field" rows={b.form} onChange={(form) => set({ body: { ...b, form } })} />}
      {b.kind === "raw" && (
        <TextArea label="Raw body" value={b.raw} rows={4} spellcheck={false} class="code"
          onInput={(e) => set({ body: { ...b, raw: (e.target as HTMLTextAreaElement).value } })} />
      )}
      {b.kind !== "none" && b.kind !== "kept" && (
        <Field label="Body's content type" value={b.contentType}
          hint={b.kind === "raw" ? "Such as application/xml." : `Optional; default ${b.kind === "json" ? "application/json" : "application/x-www-form-urlencoded"}.`}
          onInput={(e) => set({ body: { ...b, contentType: (e.target as HTMLInputElement).value } })} />
      )}
      <Field label="Think time after the request" hint={thinkHint(r.src.think)} value={r.think} placeholder="e.g. 1s" error={errs(`${at}.think`)}
        onInput={(e) => set({ think: (e.target as HTMLInputElement).value })} />
      <h3>Extractors</h3>
      {r.extract.length === 0 && <p class="hint">None: an extractor sets a variable from the response, for the requests after it.</p>}
      {r.extract.map((x, i) => (
        <ExtractorEditor key={i} x={x} at={`${at}.extract[${i}]`} error={errs(`${at}.extract[${i}]`)}
          onChange={(next) => set({ extract: replaceAt(r.extract, i, () => next) })}
          onRemove={() => set({ extract: removeAt(r.extract, i) })} />
      ))}
      <button type="button" class="secondary small"
        onClick={() => set({ extract: [...r.extract, { var: "", kind: "json", expr: "$.", default: "", src: {} }] })}>
        Add an extractor
      </button>
      <h3>Assertions</h3>
      {r.assert.length === 0 && <p class="hint">None: any status from 200 to 399 passes.</p>}
      {r.assert.map((a, i) => (
        <AssertionEditor key={i} a={a} at={`${at}.assert[${i}]`} error={errs(`${at}.assert[${i}]`)}
          onChange={(next) => set({ assert: replaceAt(r.assert, i, () => next) })}
          onRemove={() => set({ assert: removeAt(r.assert, i) })} />
      ))}
      <button type="button" class="secondary small" onClick={() => set({ assert: [...r.assert, newAssertion("status")] })}>Add an assertion</button>
      <Moves what={`request ${r.name}`} first={props.first} last={props.last} onMove={props.onMove} onRemove={props.onRemove} />
    </fieldset>
  );
}

/** Rows edits names and their values: headers, form fields. */
function Rows(props: { title: string; noun: string; rows: Row[]; error?: string; onChange: (rows: Row[]) => void }) {
  const rows = props.rows;
  return (
    <div class="rows">
      <h3>{props.title}</h3>
      <Note error={props.error} />
      {rows.map((row, i) => (
        <div class="row entry" key={i}>
          <Field label={`Name of ${props.noun} ${i + 1}`} value={row.name}
            onInput={(e) => props.onChange(replaceAt(rows, i, (x) => ({ ...x, name: (e.target as HTMLInputElement).value })))} />
          <Field label={`Value of ${props.noun} ${i + 1}`} value={row.value}
            onInput={(e) => props.onChange(replaceAt(rows, i, (x) => ({ ...x, value: (e.target as HTMLInputElement).value })))} />
          <button type="button" class="secondary small" aria-label={`Remove ${props.noun} ${row.name || i + 1}`} onClick={() => props.onChange(removeAt(rows, i))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="secondary small" onClick={() => props.onChange([...rows, { name: "", value: "" }])}>Add a {props.noun}</button>
    </div>
  );
}

const exprLabels: Record<ExtractorKind, string> = { json: "JSON path", regex: "Regular expression", header: "Header name", cookie: "Cookie name" };

function ExtractorEditor(props: { x: ExtractorModel; at: string; error?: string; onChange: (x: ExtractorModel) => void; onRemove: () => void }) {
  const x = props.x;
  return (
    <div class="row entry" id={domID(props.at)}>
      <Field label="Variable" value={x.var} required pattern="[A-Za-z_][A-Za-z0-9_]*"
        onInput={(e) => props.onChange({ ...x, var: (e.target as HTMLInputElement).value })} />
      <Select label="From" value={x.kind} options={extractorKinds.map((k): [string, string] => [k, exprLabels[k]])}
        onChange={(k) => props.onChange({ ...x, kind: k as ExtractorKind })} />
      <Field label={exprLabels[x.kind]} value={x.expr} required spellcheck={false}
        onInput={(e) => props.onChange({ ...x, expr: (e.target as HTMLInputElement).value })} />
      <Field label="Default" hint="Optional: when nothing is found." value={x.default}
        onInput={(e) => props.onChange({ ...x, default: (e.target as HTMLInputElement).value })} />
      <button type="button" class="secondary small" aria-label={`Remove the extractor of ${x.var || "a variable"}`} onClick={props.onRemove}>Remove</button>
      <Note error={props.error} />
    </div>
  );
}

const checkLabels: Record<AssertionKind, string> = {
  status: "Status", body_contains: "Body contains", body_matches: "Body matches", json: "JSON value", max_duration: "Longest time", kept: "As written",
};

const checkHints: Partial<Record<AssertionKind, string>> = {
  status: "200, or several: 200, 3xx.", body_matches: "A regular expression.", max_duration: "Such as 500ms.",
};

function AssertionEditor(props: { a: AssertionModel; at: string; error?: string; onChange: (a: AssertionModel) => void; onRemove: () => void }) {
  const a = props.a;
  const kinds: AssertionKind[] = a.kind === "kept" ? [...assertionKinds, "kept"] : [...assertionKinds];
  const input = (patch: (v: string) => Partial<AssertionModel>) => (e: Event) => props.onChange({ ...a, ...patch((e.target as HTMLInputElement).value) });
  return (
    <div class="row entry" id={domID(props.at)}>
      <Select label="Check" value={a.kind} options={kinds.map((k): [string, string] => [k, checkLabels[k]])}
        onChange={(k) => props.onChange({ ...newAssertion(k as AssertionKind), src: a.src })} />
      {a.kind === "kept" && <p class="hint"><code>{JSON.stringify(a.src)}</code>, kept as written.</p>}
      {a.kind !== "kept" && a.kind !== "json" && (
        <Field label={checkLabels[a.kind]} hint={checkHints[a.kind]} value={a.text} required onInput={input((text) => ({ text }))} />
      )}
      {a.kind === "json" && (
        <>
          <Field label="JSON path" value={a.path} required spellcheck={false} placeholder="e.g. $.items[0].id" onInput={input((path) => ({ path }))} />
          <Select label="Test" value={a.test} options={[["equals", "Equals"], ["exists", "Exists"], ["absent", "Does not exist"]]}
            onChange={(test) => props.onChange({ ...a, test: test as AssertionModel["test"] })} />
          {a.test === "equals" && (
            <Field label="Value" hint='Text, or JSON: 42, true, null, "42" for the text 42.' value={a.equals} onInput={input((equals) => ({ equals }))} />
          )}
        </>
      )}
      <button type="button" class="secondary small" aria-label={`Remove the assertion ${checkLabels[a.kind]} ${a.text || a.path}`} onClick={props.onRemove}>Remove</button>
      <Note error={props.error} />
    </div>
  );
}

const loadKinds: [LoadKind, string][] = [
  ["closed", "Closed: a number of virtual users"],
  ["closed-stages", "Closed, in stages of virtual users"],
  ["open", "Open: an arrival rate"],
  ["open-stages", "Open, in stages of rates"],
];

function LoadEditor(props: { load: LoadModel; errs: Errs; onChange: (l: LoadModel) => void }) {
  const l = props.load;
  const errs = props.errs;
  const open = l.kind === "open" || l.kind === "open-stages";
  const input = (key: keyof LoadModel) => (e: Event) => props.onChange({ ...l, [key]: (e.target as HTMLInputElement).value });
  return (
    <fieldset class="load" id={domID("load")}>
      <legend>Load</legend>
      <Note error={errs("load")} />
      <Select label="Model" value={l.kind} options={loadKinds} onChange={(k) => props.onChange({ ...l, kind: k as LoadKind })}
        hint={open ? "Iterations start at the rate whatever the response times." : "Each virtual user starts its next iteration when one ends."} />
      <div class="row">
        {l.kind === "closed" && (
          <>
            <Field label="Virtual users" type="number" min={1} value={l.vus} required error={errs("load.vus")} onInput={input("vus")} />
            <Field label="Duration" placeholder="e.g. 30s" value={l.duration} error={errs("load.duration")} onInput={input("duration")} />
            <Field label="Ramp-up" hint="Optional: start the users evenly over this time." placeholder="e.g. 10s" value={l.rampUp} error={errs("load.ramp_up")} onInput={input("rampUp")} />
            <Field label="Iterations" hint="Optional: stop after this many in all." type="number" min={1} value={l.iterations} error={errs("load.iterations")} onInput={input("iterations")} />
          </>
        )}
        {l.kind === "open" && (
          <>
            <Field label="Rate (iterations per second)" hint="Or with its unit: 90/m." value={l.rate} required error={errs("load.rate")} onInput={input("rate")} />
            <Field label="Duration" placeholder="e.g. 1m" value={l.duration} required error={errs("load.duration")} onInput={input("duration")} />
          </>
        )}
        {open && (
          <Field label="Most virtual users at once" type="number" min={1} value={l.maxVus} required error={errs("load.max_vus")} onInput={input("maxVus")} />
        )}
      </div>
      {(l.kind === "closed-stages" || l.kind === "open-stages") && (
        <>
          {l.stages.map((s, i) => (
            <div class="row entry" key={i} id={domID(`load.stages[${i}]`)}>
              <Select label={`Stage ${i + 1}`} value={s.ramp ? "ramp" : "hold"} options={[["ramp", "Ramp to"], ["hold", "Hold at"]]}
                onChange={(v) => props.onChange({ ...l, stages: replaceAt(l.stages, i, (x) => ({ ...x, ramp: v === "ramp" })) })} />
              <Field label={open ? "Rate (per second)" : "Virtual users"} value={s.target} required
                onInput={(e) => props.onChange({ ...l, stages: replaceAt(l.stages, i, (x) => ({ ...x, target: (e.target as HTMLInputElement).value })) })} />
              <Field label="For" placeholder="e.g. 1m" value={s.duration} required
                onInput={(e) => props.onChange({ ...l, stages: replaceAt(l.stages, i, (x) => ({ ...x, duration: (e.target as HTMLInputElement).value })) })} />
              <button type="button" class="secondary small" aria-label={`Remove stage ${i + 1}`} onClick={() => props.onChange({ ...l, stages: removeAt(l.stages, i) })}>Remove</button>
              <Note error={errs(`load.stages[${i}]`)} />
            </div>
          ))}
          <button type="button" class="secondary small"
            onClick={() => props.onChange({ ...l, stages: [...l.stages, { ramp: true, target: "", duration: "", src: {} }] })}>
            Add a stage
          </button>
        </>
      )}
    </fieldset>
  );
}
