// Tests: the list, and a test's page with its revisions (and the difference between two), its
// data files and its runs.
import { useState } from "preact/hooks";
import { Raw, call, loadPages, query, type Page, type Project, type Run, type Test, type TestRevision, type TestTrend } from "../api";
import { Chart, color } from "../chart";
import { diffLines } from "../diff";
import { Link, navigate, useTitle } from "../nav";
import { Badge, Failure, Field, Section, date, ms, num, pct, size, useLoad, useSubmit, fieldError, Table, numeric } from "../ui";
import { ProjectFilter, projectName } from "./projects";
import { RunVerdict, RunsTable, changeTone } from "./runs";

export function TestsPage(props: { query: URLSearchParams }) {
  useTitle("Tests");
  const project = props.query.get("project") ?? "";
  const [more, setMore] = useState<string[]>([]);
  const projects = useLoad(() => call<{ items: Project[] }>("GET", "/v1/projects"), []);
  const tests = useLoad(() => loadPages<Test>("/v1/tests", { project }, more), [more.length, project]);
  const names = new Map((projects.data?.items ?? []).map((p) => [p.id, projectName(p)]));
  const shared = names.size > 1; // a column of one project's name would say nothing
  const into = query({ project });
  return (
    <main>
      <h1>Tests</h1>
      <ProjectFilter projects={projects.data?.items} value={project} onChange={(v) => {
        setMore([]);
        navigate("/tests" + query({ project: v }));
      }} />
      <p class="actions">
        <Link class="button" href={`/tests/new${into}`}>Write a test</Link>
        <Link class="button secondary" href={`/tests/new/wizard${into}`}>Use the wizard</Link>
        <Link class="button secondary" href={`/tests/import${into}`}>Import a HAR recording</Link>
      </p>
      <Failure error={tests.error} />
      {tests.data && tests.data.items.length === 0 && (
        <p>
          No tests yet. Write one in YAML (a working example is filled in to start from), fill in the wizard's form,
          or import what your browser recorded of a visit to your site.
        </p>
      )}
      {tests.data && tests.data.items.length > 0 && (
        <Table caption="Your tests" cols={["Name", ...(shared ? ["Project"] : []), numeric("Revision"), "Last run", "Its verdict", "Last change"]}>
              {tests.data.items.map((t) => (
                <tr key={t.id}>
                  <td><Link href={`/tests/${t.id}`}>{t.name}</Link></td>
                  {shared && <td>{names.get(t.project_id) ?? ""}</td>}
                  <td class="n">{t.latest_revision}</td>
                  <td>{t.last_run ? <Link href={`/runs/${t.last_run.id}`}>{date(t.last_run.created_at)}</Link> : "never"}</td>
                  <td>{t.last_run && <RunVerdict state={t.last_run.state} outcome={t.last_run.outcome} />}</td>
                  <td>{date(t.updated_at)}</td>
                </tr>
              ))}
        </Table>
      )}
      {tests.data?.next && (
        <button type="button" class="secondary" onClick={() => setMore([...more, tests.data!.next!])}>More tests</button>
      )}
    </main>
  );
}

export function TestPage(props: { id: string }) {
  const test = useLoad(() => call<Test>("GET", `/v1/tests/${props.id}`), [props.id]);
  const revisions = useLoad(() => call<{ items: TestRevision[] }>("GET", `/v1/tests/${props.id}/revisions`), [props.id]);
  const runs = useLoad(() => call<Page<Run>>("GET", `/v1/runs?test_id=${props.id}&limit=20`), [props.id]);
  useTitle(test.data?.name ?? "Test");
  const del = useSubmit(async () => {
    if (!confirm(`Delete the test ${test.data?.name}, its revisions and data files? Its runs stay.`)) return;
    await call("DELETE", `/v1/tests/${props.id}`);
    navigate("/tests");
  });
  if (test.error) return <main><h1>Test</h1><Failure error={test.error} /></main>;
  const t = test.data;
  if (!t) return <main aria-busy="true" />;
  return (
    <main>
      <h1>{t.name}</h1>
      <p class="hint">
        Revision {t.latest_revision}, saved {date(t.updated_at)}; created {date(t.created_at)}.
      </p>
      <p class="actions">
        <Link class="button" href={`/tests/${t.id}/run`}>Run</Link>
        <Link class="button secondary" href={`/tests/${t.id}/debug`}>Debug one iteration</Link>
        <Link class="button secondary" href={`/tests/${t.id}/edit`}>Edit</Link>
        <Link class="button secondary" href={`/tests/${t.id}/wizard`}>Use the wizard</Link>
      </p>
      <Section title="Trend">
        <Trend test={t} onChange={test.reload} />
      </Section>
      <Section title="Runs">
        <Failure error={runs.error} />
        {runs.data && <RunsTable runs={runs.data.items} caption={`Runs of ${t.name}`} />}
        {runs.data?.next_cursor && <Link href={`/runs?test=${t.id}`}>Every run of this test</Link>}
      </Section>
      <Section title="Revisions">
        <Failure error={revisions.error} />
        {revisions.data && <Revisions id={t.id} revisions={revisions.data.items} />}
      </Section>
      <Section title="Data files">
        <Files test={t} onChange={test.reload} />
      </Section>
      <Section title="Delete">
        <form onSubmit={del.submit}>
          <p class="hint">Deleting the test deletes its revisions and data files; scripts generated from it, and their runs, stay.</p>
          <Failure error={del.error} />
          <button type="submit" class="danger" disabled={del.busy}>Delete this test</button>
        </form>
      </Section>
    </main>
  );
}

/** Trend draws a test's figures over its last runs, its baseline and each run's verdict against
 * it, and clears the baseline. */
function Trend(props: { test: Test; onChange: () => void }) {
  const t = props.test;
  const trend = useLoad(() => call<TestTrend>("GET", `/v1/tests/${t.id}/trend?limit=30`), [t.id, t.baseline?.run_id]);
  const clear = useSubmit(async () => {
    await call("DELETE", `/v1/tests/${t.id}/baseline`);
    props.onChange();
  });
  const b = t.baseline;
  const runs = trend.data?.runs ?? [];
  const x = runs.map((_, i) => i + 1);
  return (
    <>
      <Failure error={trend.error || clear.error} />
      {b ? (
        <form class="inline" onSubmit={clear.submit}>
          <p>
            Its runs are held against the baseline, <Link href={`/runs/${b.run_id}`}>run {b.run_id.slice(0, 8)}</Link>, within p50 +{b.max_p50_regression}%,
            p95 +{b.max_p95_regression}%, p99 +{b.max_p99_regression}%, requests/s −{b.max_rps_regression}% and errors +{b.max_error_increase} point{b.max_error_increase === 1 ? "" : "s"}.
          </p>
          <button type="submit" class="secondary" disabled={clear.busy}>Clear the baseline</button>
        </form>
      ) : (
        <p>No baseline: a finished run's page makes it the one the test's later runs are held against.</p>
      )}
      {runs.length === 0 && trend.data && <p>No ended run yet.</p>}
      {runs.length > 0 && (
        <>
          <div class="charts">
            <Chart title="Response time over the test's runs" unit=" ms" xUnit="" xWhole x={x} lines={[
              { label: "p50", color: color(0), values: runs.map((r) => r.total.p50_ms), points: true },
              { label: "p95", color: color(1), values: runs.map((r) => r.total.p95_ms), points: true },
              { label: "p99", color: color(3), values: runs.map((r) => r.total.p99_ms), points: true },
            ]} />
            <Chart title="Requests per second over the test's runs" unit="" xUnit="" xWhole x={x} lines={[
              { label: "requests/s", color: color(0), values: runs.map((r) => r.total.rps), points: true },
            ]} />
          </div>
          <Table caption="The test's last runs, oldest first" cols={[numeric("#"), "Run", numeric("Revision"), numeric("Requests/s"), numeric("p50"), numeric("p95"), numeric("p99"), numeric("Errors"), "Thresholds", "Against the baseline"]}>
            {runs.map((r, i) => (
              <tr key={r.run_id}>
                <td class="n">{i + 1}</td>
                <td><Link href={`/runs/${r.run_id}`}>{date(r.created_at)}</Link>{r.state !== "finished" && ` (${r.state.replace("_", " ")})`}</td>
                <td class="n">{r.revision}</td>
                <td class="n">{num(r.total.rps, 1)}</td>
                <td class="n">{ms(r.total.p50_ms)}</td>
                <td class="n">{ms(r.total.p95_ms)}</td>
                <td class="n">{ms(r.total.p99_ms)}</td>
                <td class="n">{pct(r.total.error_rate)}</td>
                <td>{r.thresholds_failed > 0 ? <Badge tone="bad">{r.thresholds_failed} failed</Badge> : "passed"}</td>
                <td>
                  {r.baseline ? <Badge tone="neutral">baseline</Badge> : r.verdict ? <Badge tone={changeTone(r.verdict)}>{r.verdict}</Badge> : "–"}
                </td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </>
  );
}

function Revisions(props: { id: string; revisions: TestRevision[] }) {
  const revs = props.revisions;
  const [from, setFrom] = useState(revs.length > 1 ? revs[1].revision : 0);
  const [to, setTo] = useState(revs.length > 0 ? revs[0].revision : 0);
  const [shown, setShown] = useState<number | null>(null);
  const source = (rev: number) => call<TestRevision>("GET", `/v1/tests/${props.id}/revisions/${rev}`).then((r) => r.source ?? "");
  const diff = useLoad(async () => {
    if (!from || !to || from === to) return null;
    const [a, b] = await Promise.all([source(from), source(to)]);
    return diffLines(a, b);
  }, [props.id, from, to]);
  const one = useLoad(async () => (shown ? source(shown) : null), [props.id, shown]);
  return (
    <>
      <Table caption="Revisions" cols={["Revision", "Saved", "Format", numeric("Size"), "Compare from", "to"]}>
            {revs.map((r) => (
              <tr key={r.revision}>
                <td>
                  <button type="button" class="link" aria-pressed={shown === r.revision} onClick={() => setShown(shown === r.revision ? null : r.revision)}>
                    {r.revision}
                  </button>
                </td>
                <td>{date(r.created_at)}</td>
                <td>{r.format.toUpperCase()}</td>
                <td class="n">{size(r.size)}</td>
                <td><input type="radio" name="from" aria-label={`compare from revision ${r.revision}`} checked={from === r.revision} onChange={() => setFrom(r.revision)} /></td>
                <td><input type="radio" name="to" aria-label={`compare to revision ${r.revision}`} checked={to === r.revision} onChange={() => setTo(r.revision)} /></td>
              </tr>
            ))}
      </Table>
      {shown !== null && one.data !== undefined && one.data !== null && (
        <figure>
          <figcaption>Revision {shown}</figcaption>
          <pre class="source" tabIndex={0}>{one.data}</pre>
        </figure>
      )}
      <Failure error={diff.error || one.error} />
      {diff.data && (
        <figure>
          <figcaption>From revision {from} to revision {to}</figcaption>
          <pre class="diff" tabIndex={0} aria-label={`Changes from revision ${from} to ${to}`}>
            {diff.data.map((l, i) => (
              <span key={i} class={l.op === "+" ? "add" : l.op === "-" ? "del" : undefined}>
                {l.op === "+" ? "+ " : l.op === "-" ? "- " : "  "}
                {l.text}
                {"\n"}
              </span>
            ))}
          </pre>
        </figure>
      )}
    </>
  );
}

/** fileName is a file's name as a data file's may be: letters, digits, ".", "_" and "-", not
 * starting with "." or "-", 100 at most; "my data.csv" is my_data.csv. */
function fileName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^[.-]+/, "").slice(0, 100) || "data.csv";
}

function Files(props: { test: Test; onChange: () => void }) {
  const t = props.test;
  const [name, setName] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const up = useSubmit(async () => {
    if (!file) throw new Error("choose a file");
    await call("PUT", `/v1/tests/${t.id}/files/${encodeURIComponent(name || fileName(file.name))}`, new Raw(file, "application/octet-stream"));
    setName("");
    props.onChange();
  });
  const del = async (n: string) => {
    if (!confirm(`Delete the data file ${n}?`)) return;
    await call("DELETE", `/v1/tests/${t.id}/files/${encodeURIComponent(n)}`);
    props.onChange();
  };
  return (
    <>
      {t.files.length === 0 ? (
        <p>No data files. A script's data variable reads a CSV file by its name; upload it here.</p>
      ) : (
        <Table caption="Data files" cols={["Name", numeric("Size"), "Uploaded", ""]}>
            {t.files.map((f) => (
              <tr key={f.name}>
                <td><a href={`/v1/tests/${t.id}/files/${encodeURIComponent(f.name)}`} download={f.name}>{f.name}</a></td>
                <td class="n">{size(f.size)}</td>
                <td>{f.updated_at && date(f.updated_at)}</td>
                <td><button type="button" class="secondary" onClick={() => del(f.name)}>Delete {f.name}</button></td>
              </tr>
            ))}
        </Table>
      )}
      <form onSubmit={up.submit}>
        <div class="field">
          <label for="data-file">Upload a data file</label>
          <input id="data-file" type="file" required onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0] ?? null)} />
        </div>
        <Field label="Its name in the script" hint="Default: the file's own name, each character a name may not hold made _." value={name}
          error={fieldError(up.error, "name")} pattern="[A-Za-z0-9_][A-Za-z0-9._\-]{0,99}"
          onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        <Failure error={up.error} />
        <button type="submit" disabled={up.busy}>Upload</button>
      </form>
    </>
  );
}
