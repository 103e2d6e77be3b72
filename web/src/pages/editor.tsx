// The script editor: a test's YAML (or JSON), checked by the server's own parser as it is typed,
// its errors shown at their lines; saving makes a new test or the test's next revision.
import { useEffect, useRef, useState } from "preact/hooks";
import { Problem, Raw, call, projectInAddress, query, type FieldError, type Test, type TestCheck, type TestRevision } from "../api";
import { Link, navigate, useTitle } from "../nav";
import { Failure, Field, useLoad, useSubmit } from "../ui";
import { PluginPicker, withPlugin } from "./pluginpicker";

/** The script a new test starts from: the demo shop's smoke test, which the demo agent may run. */
export const starter = `# A test: five virtual users ask the demo shop for its products, check the answer and think.
# docs/scripts.md has the whole format.
version: 1
name: products
base_url: http://127.0.0.1:8081
session:
  groups:
    - name: browse
      requests:
        - name: list products
          url: /api/products
          assert:
            - status: 200
          think: 1s
load:
  vus: 5
  duration: 30s
thresholds:
  - error_rate < 1%
  - p95 < 500ms
`;

/** lineOf is the line an error names: its own line, else one said in its reason ("line 12"). */
export function lineOf(e: FieldError): number | undefined {
  if (e.line) return e.line;
  const m = /\bline (\d+)/.exec(e.reason);
  return m ? Number(m[1]) : undefined;
}

function contentType(source: string): string {
  return /^\s*[{[]/.test(source) ? "application/json" : "application/yaml";
}

/** useCheck asks the server what it thinks of source, once typing pauses. */
export function useCheck(source: string): { check?: TestCheck; error: unknown; checking: boolean } {
  const [check, setCheck] = useState<TestCheck | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [checking, setChecking] = useState(false);
  useEffect(() => {
    let live = true;
    setChecking(true);
    const timer = setTimeout(() => {
      call<TestCheck>("POST", "/v1/tests/check", new Raw(source, contentType(source))).then(
        (c) => {
          if (!live) return;
          setCheck(c);
          setError(null);
          setChecking(false);
        },
        (e) => {
          if (!live) return;
          setError(e);
          setChecking(false);
        },
      );
    }, 400);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [source]);
  return { check, error, checking };
}

/** saveScript saves source as test t's next revision, or as a new test without t (in the project
 * the page's address names, else the personal one); a name other than t's renames it. */
export function saveScript(t: Test | undefined, name: string, source: string): Promise<Test> {
  const body = new Raw(source, contentType(source));
  const renamed = name && name !== t?.name ? name : undefined;
  return t
    ? call<Test>("PATCH", `/v1/tests/${t.id}` + query({ name: renamed }), body)
    : call<Test>("POST", "/v1/tests" + query({ name: renamed, project: projectInAddress() }), body);
}

/** scriptErrors are the errors of a script: those its save was refused for, else those of its
 * last check (what the save was refused for is newer). */
export function scriptErrors(saveError: unknown, check: TestCheck | undefined): FieldError[] {
  return saveError instanceof Problem && saveError.errors.length ? saveError.errors : (check?.errors ?? []);
}

/** SaveActions end a script's form: what went wrong besides its fields (the check could not be
 * made, the save failed), and the save button. */
export function SaveActions(props: { test?: Test; checkError: unknown; save: { error: unknown; busy: boolean } }) {
  const t = props.test;
  const save = props.save;
  return (
    <>
      <Failure error={props.checkError || (save.error instanceof Problem && save.error.errors.length ? null : save.error)} />
      <p class="actions">
        <button type="submit" disabled={save.busy}>{t ? "Save revision" : "Save test"}</button>
        {t && <Link class="button secondary" href={`/tests/${t.id}`}>Back to the test</Link>}
      </p>
    </>
  );
}

/** EditorPage edits test id's latest revision, or writes a new test. */
export function EditorPage(props: { id?: string }) {
  const id = props.id;
  const loaded = useLoad(async () => {
    if (!id) return { test: undefined as Test | undefined, source: sessionStorage.getItem("barrage-draft") ?? starter };
    const test = await call<Test>("GET", `/v1/tests/${id}`);
    const rev = await call<TestRevision>("GET", `/v1/tests/${id}/revisions/${test.latest_revision}`);
    return { test, source: rev.source ?? "" };
  }, [id]);
  useTitle(id ? `Edit ${loaded.data?.test?.name ?? "test"}` : "Write a test");
  if (loaded.error) return <main><h1>Edit</h1><Failure error={loaded.error} /></main>;
  if (!loaded.data) return <main aria-busy="true" />;
  return <Editor test={loaded.data.test} initial={loaded.data.source} />;
}

function Editor(props: { test?: Test; initial: string }) {
  const t = props.test;
  const [source, setSource] = useState(props.initial);
  const [name, setName] = useState(t?.name ?? "");
  const area = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLPreElement>(null);
  const { check, error: checkError, checking } = useCheck(source);
  const save = useSubmit(async () => {
    const saved = await saveScript(t, name, source);
    sessionStorage.removeItem("barrage-draft");
    navigate(`/tests/${saved.id}`);
  });
  useEffect(() => {
    if (!t) sessionStorage.setItem("barrage-draft", source);
  }, [source]);

  const errors = scriptErrors(save.error, check);
  const byLine = new Map<number, string[]>();
  for (const e of errors) {
    const l = lineOf(e);
    if (l) byLine.set(l, [...(byLine.get(l) ?? []), e.reason]);
  }
  const lines = source.split("\n").length;
  const gutterText = Array.from({ length: lines }, (_, i) => (byLine.has(i + 1) ? "● " : "  ") + String(i + 1).padStart(4)).join("\n");
  const goTo = (line: number) => {
    const a = area.current;
    if (!a) return;
    let at = 0;
    for (let i = 1; i < line; i++) at = source.indexOf("\n", at) + 1;
    const end = source.indexOf("\n", at);
    a.focus();
    a.setSelectionRange(at, end < 0 ? source.length : end);
  };
  const status = checking ? "Checking…" : check?.valid ? "The script is valid." : check ? `${errors.length} error${errors.length === 1 ? "" : "s"}` : "";
  return (
    <main class="wide">
      <h1>{t ? `Edit ${t.name}` : "Write a test"}</h1>
      <p class="hint">
        {t ? `Saving makes revision ${t.latest_revision + 1}; revision ${t.latest_revision} stays as it was.` : "Saving makes the test's revision 1."}{" "}
        The format is in <a href="/docs">the API docs</a> and docs/scripts.md; the server checks the script as you type.
      </p>
      <form onSubmit={save.submit} class="editor-form">
        <Field label="Name" hint="Default: the script's name." value={name} maxLength={200}
          onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        <div class="field">
          <label for="source">Script (YAML or JSON)</label>
          <div class="editor">
            <pre class="gutter" ref={gutter} aria-hidden="true">{gutterText}</pre>
            <textarea id="source" ref={area} value={source} spellcheck={false} autocapitalize="off" autocomplete="off"
              aria-invalid={errors.length > 0 ? true : undefined} aria-describedby="source-status source-errors"
              onInput={(e) => setSource((e.target as HTMLTextAreaElement).value)}
              onScroll={(e) => { if (gutter.current) gutter.current.scrollTop = (e.target as HTMLTextAreaElement).scrollTop; }} />
          </div>
          <p id="source-status" class={check?.valid ? "hint ok" : "hint"} role="status">{status}</p>
        </div>
        <ul id="source-errors" class="errors" aria-label="Errors in the script">
          {errors.map((e, i) => {
            const l = lineOf(e);
            return (
              <li key={i}>
                {l ? <button type="button" class="link" onClick={() => goTo(l)}>line {l}</button> : null}
                {l ? ": " : ""}
                {e.field && <code>{e.field}</code>}
                {e.field ? ": " : ""}
                {e.reason}
              </li>
            );
          })}
        </ul>
        <PluginPicker taken={[...source.matchAll(/\bas:\s*([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1])}
          onAdd={(u) => setSource(withPlugin(source, u))} />
        <SaveActions test={t} checkError={checkError} save={save} />
      </form>
    </main>
  );
}
