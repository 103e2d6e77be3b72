// Launching a run of a test: on which agents, with what load, with which values of the script's
// environment; the license's and the agents' limits shown before, and a refusal on its field.
import { useState } from "preact/hooks";
import { Problem, call, type Agent, type LimitViolation, type MyLicense, type Page, type Run, type RunStage, type Test } from "../api";
import { Link, navigate, useTitle } from "../nav";
import { Failure, Field, RevisionSelect, duration, fieldError, useLoad, useSubmit } from "../ui";

type Model = "script" | "closed" | "open" | "stages" | "sweep";

/** limitField is the field of the form a broken limit is about. */
const limitField: Record<string, string> = {
  max_vus: "vus",
  max_run_duration_seconds: "duration_seconds",
  max_concurrent_runs: "agents",
};

function violationFor(err: unknown, field: string): string | undefined {
  if (!(err instanceof Problem)) return undefined;
  const v = err.violations.filter((v: LimitViolation) => limitField[v.limit] === field);
  if (v.length === 0) return fieldError(err, field);
  return v.map((x) => `${x.limit.replaceAll("_", " ")}: ${String(x.allowed)} allowed${x.set_by ? ` by ${x.set_by}` : ""}, ${String(x.requested)} asked`).join("; ");
}

export function LaunchPage(props: { id: string }) {
  const test = useLoad(() => call<Test>("GET", `/v1/tests/${props.id}`), [props.id]);
  const agents = useLoad(() => call<Page<Agent>>("GET", "/v1/agents"), []);
  const license = useLoad(() => call<MyLicense>("GET", "/v1/me/license"), []);
  useTitle(`Run ${test.data?.name ?? "test"}`);
  const [chosen, setChosen] = useState<string[]>([]);
  const [model, setModel] = useState<Model>("script");
  const [vus, setVUs] = useState("");
  const [secs, setSecs] = useState("");
  const [rate, setRate] = useState("");
  const [stages, setStages] = useState<{ kind: "rate" | "ramp_to"; value: string; seconds: string }[]>([{ kind: "ramp_to", value: "", seconds: "" }]);
  const [levels, setLevels] = useState("");
  const [step, setStep] = useState("");
  const [env, setEnv] = useState<{ name: string; value: string }[]>([]);
  const [revision, setRevision] = useState("");
  const start = useSubmit(async () => {
    // The latest revision runs as the test (its script generated once the run is admitted);
    // an earlier one is generated first, and its script runs.
    const body: Record<string, unknown> = revision
      ? { script_id: (await call<{ id: string }>("POST", `/v1/tests/${props.id}/scripts`, { revision: Number(revision) })).id }
      : { test_id: props.id };
    if (chosen.length) body.agent_ids = chosen;
    if (model !== "script") {
      if (vus) body.vus = Number(vus);
      if (model === "closed" || model === "open") {
        if (secs) body.duration_seconds = Number(secs);
      }
      if (model === "open") body.rate = Number(rate);
      if (model === "sweep") {
        delete body.vus;
        body.sweep = { vus: levels.split(/[\s,]+/).filter(Boolean).map(Number), step_seconds: Number(step) };
      }
      if (model === "stages") {
        body.stages = stages.map((s): RunStage => ({ [s.kind]: Number(s.value), duration_seconds: Number(s.seconds) }) as RunStage);
      }
    }
    const named = env.filter((e) => e.name);
    if (named.length) body.env = Object.fromEntries(named.map((e) => [e.name, e.value]));
    const run = await call<Run>("POST", "/v1/runs", body);
    navigate(`/runs/${run.id}`);
  });
  const lic = license.data;
  const all = agents.data?.items ?? [];
  const err = start.error;
  const generalError = err instanceof Problem && (err.errors.length || err.violations.length) ? null : err;
  const unplaced = err instanceof Problem
    ? [...err.errors.filter((e) => !["vus", "duration_seconds", "rate", "agent_ids"].includes(e.field) && !e.field.startsWith("stages") && !e.field.startsWith("sweep") && !e.field.startsWith("env.")).map((e) => `${e.field}: ${e.reason}`),
      ...err.violations.filter((v) => !limitField[v.limit]).map((v) => `${v.limit.replaceAll("_", " ")}: ${String(v.allowed)} allowed, ${String(v.requested)} asked`)]
    : [];
  if (test.error) return <main><h1>Run</h1><Failure error={test.error} /></main>;
  return (
    <main>
      <h1>Run {test.data?.name}</h1>
      <Failure error={agents.error || license.error} />
      {lic && (
        <p class="hint" id="license-limits">
          {lic.unlimited
            ? "Your license has no limits."
            : `Your license allows ${lic.max_vus} virtual users, runs of ${duration(lic.max_run_duration_seconds ?? 0)} and ${lic.max_concurrent_runs} run${lic.max_concurrent_runs === 1 ? "" : "s"} at a time${lic.expired ? "; it has expired" : ""}.`}{" "}
          The run must fit it and every agent's own limits.
        </p>
      )}
      <form class="launch" onSubmit={start.submit} aria-describedby="license-limits">
        {test.data && test.data.latest_revision > 1 && (
          <RevisionSelect latest={test.data.latest_revision} value={revision} onChange={setRevision} />
        )}
        <fieldset>
          <legend>Agents</legend>
          {all.length === 0 && <p>No agent is yours to use.</p>}
          {all.map((a) => (
            <div class="check" key={a.id}>
              <input type="checkbox" id={`agent-${a.id}`} aria-describedby={`agent-${a.id}-about`} checked={chosen.includes(a.id)} disabled={a.state !== "online"}
                onChange={(e) => setChosen((e.target as HTMLInputElement).checked ? [...chosen, a.id] : chosen.filter((x) => x !== a.id))} />
              <label for={`agent-${a.id}`}>{a.name}</label>
              <span id={`agent-${a.id}-about`} class="hint">
                {a.state}{a.shared ? ", shared" : ""}, {a.cores} cores
                {a.max_vus || a.max_run_duration_seconds ? "; at most " : ""}
                {a.max_vus ? `${a.max_vus} VUs` : ""}
                {a.max_vus && a.max_run_duration_seconds ? " for " : ""}
                {a.max_run_duration_seconds ? duration(a.max_run_duration_seconds) : ""}
              </span>
            </div>
          ))}
          <p class="hint">None chosen: the first idle online agent you may use, yours first.</p>
          {violationFor(err, "agents") && <p class="error">{violationFor(err, "agents")}</p>}
          {fieldError(err, "agent_ids") && <p class="error">{fieldError(err, "agent_ids")}</p>}
        </fieldset>
        <fieldset>
          <legend>Load</legend>
          {([
            ["script", "As the script says"],
            ["closed", "Virtual users for a time (closed model)"],
            ["open", "Arrivals per second for a time (open model)"],
            ["stages", "Stages of arrival rates (open model)"],
            ["sweep", "A concurrency sweep: levels of virtual users, one after the other"],
          ] as [Model, string][]).map(([m, text]) => (
            <label class="check" key={m}>
              <input type="radio" name="model" checked={model === m} onChange={() => setModel(m)} /> {text}
            </label>
          ))}
          {model === "sweep" && (
            <>
              <Field label="Levels of virtual users" hint="Going up, comma-separated: 10, 20, 40, 80." required value={levels}
                error={fieldError(err, "sweep.vus") ?? fieldError(err, "sweep")} onInput={(e) => setLevels((e.target as HTMLInputElement).value)} />
              <Field label="Seconds at each level" type="number" min={1} required value={step}
                error={fieldError(err, "sweep.step_seconds")} onInput={(e) => setStep((e.target as HTMLInputElement).value)} />
            </>
          )}
          {model !== "script" && model !== "sweep" && (
            <Field label={model === "closed" ? "Virtual users" : "Most virtual users at once"} type="number" min={1} value={vus}
              required={model === "closed"} error={violationFor(err, "vus")} onInput={(e) => setVUs((e.target as HTMLInputElement).value)} />
          )}
          {model === "open" && (
            <Field label="Arrivals per second" type="number" min={0.001} step="any" required value={rate}
              error={fieldError(err, "rate")} onInput={(e) => setRate((e.target as HTMLInputElement).value)} />
          )}
          {(model === "closed" || model === "open") && (
            <Field label="Duration in seconds" type="number" min={1} required value={secs}
              error={violationFor(err, "duration_seconds")} onInput={(e) => setSecs((e.target as HTMLInputElement).value)} />
          )}
          {model === "stages" && (
            <>
              {stages.map((s, i) => (
                <div class="stage" key={i} role="group" aria-label={`Stage ${i + 1}`}>
                  <label class="check">
                    <input type="radio" name={`stage-${i}`} checked={s.kind === "ramp_to"} onChange={() => setStages(stages.map((x, j) => (j === i ? { ...x, kind: "ramp_to" } : x)))} /> ramp to
                  </label>
                  <label class="check">
                    <input type="radio" name={`stage-${i}`} checked={s.kind === "rate"} onChange={() => setStages(stages.map((x, j) => (j === i ? { ...x, kind: "rate" } : x)))} /> hold
                  </label>
                  <Field label={`Stage ${i + 1}: arrivals per second`} type="number" min={0} step="any" required value={s.value}
                    error={fieldError(err, `stages[${i}]`)} onInput={(e) => setStages(stages.map((x, j) => (j === i ? { ...x, value: (e.target as HTMLInputElement).value } : x)))} />
                  <Field label={`Stage ${i + 1}: seconds`} type="number" min={1} required value={s.seconds}
                    onInput={(e) => setStages(stages.map((x, j) => (j === i ? { ...x, seconds: (e.target as HTMLInputElement).value } : x)))} />
                  {stages.length > 1 && <button type="button" class="secondary" onClick={() => setStages(stages.filter((_, j) => j !== i))}>Remove stage {i + 1}</button>}
                </div>
              ))}
              {fieldError(err, "stages") && <p class="error">{fieldError(err, "stages")}</p>}
              <button type="button" class="secondary" onClick={() => setStages([...stages, { kind: "rate", value: "", seconds: "" }])}>Add a stage</button>
            </>
          )}
        </fieldset>
        <fieldset>
          <legend>Environment</legend>
          <p class="hint">Values of the variables the script reads from its environment (<code>variables.env</code>), for this run alone. They are kept with the run: put secrets in secrets.</p>
          {env.map((e, i) => (
            <div class="pair" key={i} role="group" aria-label={`Variable ${i + 1}`}>
              <Field label="Name" value={e.name} required onInput={(ev) => setEnv(env.map((x, j) => (j === i ? { ...x, name: (ev.target as HTMLInputElement).value } : x)))} />
              <Field label="Value" value={e.value} error={fieldError(err, `env.${e.name}`)}
                onInput={(ev) => setEnv(env.map((x, j) => (j === i ? { ...x, value: (ev.target as HTMLInputElement).value } : x)))} />
              <button type="button" class="secondary" onClick={() => setEnv(env.filter((_, j) => j !== i))}>Remove {e.name || `variable ${i + 1}`}</button>
            </div>
          ))}
          <button type="button" class="secondary" onClick={() => setEnv([...env, { name: "", value: "" }])}>Add a variable</button>
        </fieldset>
        {unplaced.length > 0 && (
          <ul class="error" role="alert">{unplaced.map((u, i) => <li key={i}>{u}</li>)}</ul>
        )}
        <Failure error={generalError} />
        <p class="actions">
          <button type="submit" disabled={start.busy}>{start.busy ? "Starting…" : "Start the run"}</button>
          <Link class="button secondary" href={`/tests/${props.id}/debug`}>Debug it first</Link>
        </p>
      </form>
    </main>
  );
}
