// Importing a HAR recording: the browser's export of its network panel becomes a test, with the
// values the converter carried from one response into later requests listed.
import { useState } from "preact/hooks";
import { Problem, Raw, call, projectInAddress, query, type TestImport } from "../api";
import { Link, useTitle } from "../nav";
import { Failure, Field, Section, useSubmit, Table } from "../ui";

export function ImportPage() {
  useTitle("Import a HAR recording");
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState("");
  const [assets, setAssets] = useState(false);
  const [done, setDone] = useState<TestImport | null>(null);
  const send = useSubmit(async () => {
    if (!file) throw new Error("Choose a HAR file.");
    const q = query({ name, assets: assets ? "true" : undefined, project: projectInAddress() });
    setDone(await call<TestImport>("POST", `/v1/tests/import${q}`, new Raw(file, "application/json")));
  });
  const err = send.error;
  return (
    <main>
      <h1>Import a HAR recording</h1>
      <p class="hint">
        Record a visit in your browser (the network panel's "Save all as HAR"), or with <code>barrage record --har</code>, and
        import it: its requests become a test, grouped by page, with the pauses as think times, and each value one response
        gave and a later request sent (a CSRF token, an order id) carried by an extractor. The server reads the file alone;
        it fetches nothing.
      </p>
      <form onSubmit={send.submit}>
        <div class="field">
          <label for="har">HAR file</label>
          <input id="har" type="file" accept=".har,application/json" required onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0] ?? null)} />
        </div>
        <Field label="Test name" hint="Default: recording of the host." value={name} maxLength={200} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        <label class="check">
          <input type="checkbox" checked={assets} onChange={(e) => setAssets((e.target as HTMLInputElement).checked)} /> Keep static assets (images, CSS, scripts, fonts)
        </label>
        {err instanceof Problem && err.errors.length > 0 && (
          <ul class="error" role="alert">{err.errors.map((e, i) => <li key={i}><code>{e.field}</code>: {e.reason}</li>)}</ul>
        )}
        <Failure error={err instanceof Problem && err.errors.length ? null : err} />
        <button type="submit" disabled={send.busy}>Import</button>
      </form>
      {done && (
        <Section title={`Imported as ${done.test.name}`}>
          <p>
            {done.requests} requests in {done.groups} groups; {done.assets_left_out} static assets left out, {done.skipped} entries that cannot be replayed skipped.{" "}
            <Link href={`/tests/${done.test.id}`}>Open the test</Link> or <Link href={`/tests/${done.test.id}/debug`}>debug it</Link>.
          </p>
          {done.correlations.length > 0 && (
            <>
              <h3>Correlations</h3>
              <Table caption="Values carried from a response into later requests" cols={["Variable", "From", "Where", "Used in"]}>
                  {done.correlations.map((c) => (
                    <tr key={c.variable}>
                      <td><code>{"${" + c.variable + "}"}</code></td>
                      <td>{c.request}</td>
                      <td>{c.seen}</td>
                      <td>{c.uses.map((u) => `${u.request} (${u.where})`).join(", ")}</td>
                    </tr>
                  ))}
              </Table>
            </>
          )}
          {done.missed.length > 0 && (
            <>
              <h3>Values sent as recorded</h3>
              <ul>{done.missed.map((m, i) => <li key={i}>{m.request} sent {m.where} as recorded ({m.source} gave it): {m.why}</li>)}</ul>
            </>
          )}
          {done.parameters.length > 0 && (
            <>
              <h3>Typed-in values a data file could provide</h3>
              <ul>{done.parameters.map((p, i) => <li key={i}>{p.request}, {p.where}: <code>{p.value}</code></li>)}</ul>
            </>
          )}
          {done.secrets.length > 0 && <p>Your secrets read by the script: {done.secrets.join(", ")}.</p>}
          {done.warnings.length > 0 && <ul class="warning">{done.warnings.map((w, i) => <li key={i}>{w}</li>)}</ul>}
        </Section>
      )}
    </main>
  );
}
