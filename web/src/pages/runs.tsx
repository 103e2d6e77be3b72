// Runs: the list with its filters, and the table of runs that a test's page shows too.
import { useState } from "preact/hooks";
import { call, endedStates, loadPages, query, type Page, type Project, type Run, type RunOutcome, type RunState, type Test } from "../api";
import { Link, navigate, useTitle } from "../nav";
import { ProjectFilter } from "./projects";
import { Badge, Failure, Select, date, duration, ms, num, pct, useLoad, type Tone, Table, numeric } from "../ui";

/** verdict says in a word how a run went: its state while it runs, and once ended whether its
 * figures can be trusted and its thresholds held. */
export function verdict(state: RunState, outcome?: RunOutcome): [string, Tone] {
  if (!endedStates.includes(state)) return [state, "neutral"];
  if (outcome && outcome.thresholds_failed > 0) return [`${outcome.thresholds_failed} threshold${outcome.thresholds_failed > 1 ? "s" : ""} failed`, "bad"];
  if (state !== "finished") return [state.replace("_", " "), "bad"];
  if (outcome?.baseline_verdict === "regressed") return ["regressed", "bad"];
  if (outcome?.incomplete) return ["incomplete", "warn"];
  if (outcome?.generator_limited) return ["generator-limited", "warn"];
  return ["passed", "good"];
}

/** changeTone is the tone of a comparison's verdict. */
export function changeTone(v: string): Tone {
  return v === "regressed" ? "bad" : v === "improved" ? "good" : "neutral";
}

export function RunVerdict(props: { state: RunState; outcome?: RunOutcome }) {
  const [text, tone] = verdict(props.state, props.outcome);
  return <Badge tone={tone}>{text}</Badge>;
}

/** loadText reads a run's load: 50 VUs for 2 min, 200/s for 1 min, 3 stages, a sweep. */
export function loadText(r: Run): string {
  const l = r.load;
  const dur = l.duration_seconds ? ` for ${duration(l.duration_seconds)}` : "";
  if (l.sweep) return `sweep ${l.sweep.vus.join(", ")} VUs`;
  if (l.stages) return `${l.stages.length} stage${l.stages.length > 1 ? "s" : ""}`;
  if (l.rate) return `${num(l.rate, l.rate % 1 ? 1 : 0)}/s${dur}`;
  if (r.vus) return `${r.vus} VU${r.vus === 1 ? "" : "s"}${dur}`;
  return "the script's";
}

function runDuration(r: Run): string {
  if (!r.start_at || !r.ended_at) return "–";
  const s = Math.max(0, Math.round((Date.parse(r.ended_at) - Date.parse(r.start_at)) / 1000));
  return duration(s);
}

export function RunsTable(props: { runs: Run[]; caption: string }) {
  if (props.runs.length === 0) return <p>No runs yet.</p>;
  return (
    <Table caption={props.caption} cols={["Created", "Test", "Load", "Duration", numeric("Requests"), numeric("p95"), numeric("Errors"), "Verdict"]}>
          {props.runs.map((r) => (
            <tr key={r.id}>
              <td><Link href={`/runs/${r.id}`}>{date(r.created_at)}</Link></td>
              <td>{r.manifest.script_name}</td>
              <td>{loadText(r)}</td>
              <td>{runDuration(r)}</td>
              <td class="n">{num(r.outcome?.requests)}</td>
              <td class="n">{ms(r.outcome?.p95_ms)}</td>
              <td class="n">{pct(r.outcome?.error_rate)}</td>
              <td><RunVerdict state={r.state} outcome={r.outcome} /></td>
            </tr>
          ))}
    </Table>
  );
}

const stateChoices: [string, string][] = [
  ["", "Any state"],
  ["active", "Queued or running"],
  ["finished", "Finished"],
  ["failed", "Failed"],
  ["canceled", "Canceled"],
  ["aborted_threshold", "Stopped by a threshold"],
  ["aborted_limit", "Stopped at a limit"],
  ["timed_out", "Timed out"],
];

/** RunsPage lists the user's runs, narrowed by test, state and date (the filters are in the
 * page's address, so a filtered list can be shared and reloaded). */
export function RunsPage(props: { query: URLSearchParams }) {
  useTitle("Runs");
  const q = props.query;
  const test = q.get("test") ?? "";
  const state = q.get("state") ?? "";
  const since = q.get("since") ?? "";
  const until = q.get("until") ?? "";
  const project = q.get("project") ?? "";
  const [pages, setPages] = useState<string[]>([]); // the cursors of the pages after the first
  const tests = useLoad(() => call<Page<Test>>("GET", "/v1/tests" + query({ limit: 200, project })), [project]);
  const projects = useLoad(() => call<{ items: Project[] }>("GET", "/v1/projects"), []);
  const states = state === "active" ? ["queued", "starting", "running"] : state || undefined;
  // A day of the address's that is no date (edited by hand) filters nothing, and says so.
  const day = (d: string, plus = 0) => {
    const t = /^\d{4}-\d{2}-\d{2}$/.test(d) ? new Date(d + "T00:00:00").getTime() : NaN;
    return isNaN(t) ? undefined : new Date(t + plus).toISOString();
  };
  const badDay = [since, until].filter((d) => d && !day(d));
  const filter = { test_id: test || undefined, state: states, since: day(since), until: day(until, 86400000), project: project || undefined };
  const runs = useLoad(() => loadPages<Run>("/v1/runs", filter, pages), [test, state, since, until, project, pages.length]);
  const set = (k: string, v: string) => {
    const n = new URLSearchParams(q);
    if (v) n.set(k, v);
    else n.delete(k);
    setPages([]);
    const s = n.toString();
    navigate("/runs" + (s ? "?" + s : ""), true);
  };
  return (
    <main>
      <h1>Runs</h1>
      <form class="filters" role="search" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        <ProjectFilter projects={projects.data?.items} value={project} onChange={(v) => set("project", v)} />
        <Select label="Test" value={test} onChange={(v) => set("test", v)}
          options={[["", "Every test"], ...(tests.data?.items ?? []).map((t): [string, string] => [t.id, t.name]),
            ...(test && tests.data && !tests.data.items.some((t) => t.id === test) ? [[test, "The test in the address"] as [string, string]] : [])]} />
        <Select label="State" value={state} onChange={(v) => set("state", v)} options={stateChoices} />
        <div class="field">
          <label for="since">From</label>
          <input id="since" type="date" value={since} onChange={(e) => set("since", (e.target as HTMLInputElement).value)} />
        </div>
        <div class="field">
          <label for="until">To</label>
          <input id="until" type="date" value={until} onChange={(e) => set("until", (e.target as HTMLInputElement).value)} />
        </div>
      </form>
      {badDay.length > 0 && <p class="warning" role="note">{badDay.join(" and ")} is no date (YYYY-MM-DD): it filters nothing.</p>}
      <Failure error={runs.error} />
      {runs.data && (runs.data.items.length === 0 && (test || state || since || until || project)
        ? <p>No runs match these filters.</p>
        : <RunsTable runs={runs.data.items} caption="Runs" />)}
      {runs.data?.next && (
        <button type="button" class="secondary" onClick={() => setPages([...pages, runs.data!.next!])}>
          More runs
        </button>
      )}
    </main>
  );
}
