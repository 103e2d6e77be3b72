// Pieces every page uses: a labelled field that shows the server's reason for it, a form's
// general error, and how numbers and sizes read.
import type { ComponentChildren, InputHTMLAttributes, TextareaHTMLAttributes } from "preact";
import { useEffect, useId, useState } from "preact/hooks";
import { Problem } from "./api";

/** Labelled is a control with its label, and under it the server's reason against it (error)
 * or a hint; control draws the control given its id and the id of what describes it. */
function Labelled(props: {
  label: string;
  error?: string;
  hint?: string;
  control: (id: string, describedBy?: string) => ComponentChildren;
}) {
  const id = useId();
  const note = props.error ?? props.hint;
  return (
    <div class={props.error ? "field invalid" : "field"}>
      <label for={id}>{props.label}</label>
      {props.control(id, note ? id + "-note" : undefined)}
      {note && (
        <p id={id + "-note"} class={props.error ? "error" : "hint"}>
          {note}
        </p>
      )}
    </div>
  );
}

/** Field is a labelled input; error is the server's reason for it, shown under it. */
export function Field(props: { label: string; error?: string; hint?: string } & InputHTMLAttributes<HTMLInputElement>) {
  const { label, error, hint, ...input } = props;
  return <Labelled label={label} error={error} hint={hint}
    control={(id, note) => <input id={id} aria-invalid={error ? true : undefined} aria-describedby={note} {...input} />} />;
}

/** TextArea is a labelled textarea; error is the reason against it, shown under it. */
export function TextArea(props: { label: string; error?: string; hint?: string } & TextareaHTMLAttributes<HTMLTextAreaElement>) {
  const { label, error, hint, ...area } = props;
  return <Labelled label={label} error={error} hint={hint}
    control={(id, note) => <textarea id={id} aria-invalid={error ? true : undefined} aria-describedby={note} {...area} />} />;
}

/** Failure says what went wrong with a whole form: the problem's detail, or its title. */
export function Failure(props: { error: unknown }) {
  const e = props.error;
  if (!e) return null;
  const text =
    e instanceof Problem ? e.detail || e.title
    : e instanceof TypeError ? "The server could not be reached: " + e.message
    : e instanceof Error ? e.message
    : String(e);
  return (
    <p class="failure" role="alert">
      {text}
    </p>
  );
}

/** useSubmit runs a form's action when it is submitted, and says whether it is running and
 * what went wrong the last time. */
export function useSubmit(action: () => Promise<void>) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await action();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return { submit, busy, error };
}

/** useAction runs what a page does on a click with arguments (a row's button), and keeps what
 * went wrong the last time: act(f) is f, its failure kept in error rather than thrown. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  function act<A extends unknown[]>(f: (...args: A) => Promise<void>) {
    return async (...args: A) => {
      setError(null);
      try {
        await f(...args);
      } catch (e) {
        setError(e);
      }
    };
  }
  return { error, act };
}

/** fieldError is the reason the server gave for field, when err is a Problem naming it. */
export function fieldError(err: unknown, field: string): string | undefined {
  return err instanceof Problem ? err.reasonFor(field) : undefined;
}

export function Section(props: { title: string; children: ComponentChildren }) {
  return (
    <section>
      <h2>{props.title}</h2>
      {props.children}
    </section>
  );
}

/** size reads n bytes as people read a size: 246 B, 12.5 KiB, 256.0 MiB. */
export function size(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/** duration reads seconds as 30 min, 2 h, 45 s. */
export function duration(s: number): string {
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

export function date(iso: string): string {
  return new Date(iso).toLocaleString();
}

/** useLoad fetches what a page shows when its inputs change; reload fetches it again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    let live = true;
    setError(null);
    load().then(
      (d) => live && setData(d),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [...deps, n]);
  return { data, error, reload: () => setN((x) => x + 1), set: setData };
}

/** Select is a labelled choice among options, each a value and what it reads. */
export function Select(props: {
  label: string;
  value: string;
  options: [string, string][];
  onChange: (v: string) => void;
  error?: string;
  hint?: string;
}) {
  return <Labelled label={props.label} error={props.error} hint={props.hint} control={(id, note) => (
    <select id={id} value={props.value} aria-describedby={note} onChange={(e) => props.onChange((e.target as HTMLSelectElement).value)}>
      {props.options.map(([v, text]) => <option key={v} value={v}>{text}</option>)}
    </select>
  )} />;
}

/** ms reads a time in milliseconds: 0.42 ms, 12.3 ms, 1,204 ms. */
export function ms(v: number | undefined): string {
  if (v === undefined || !isFinite(v)) return "–";
  if (v < 1) return `${v.toFixed(2)} ms`;
  if (v < 100) return `${v.toFixed(1)} ms`;
  return `${Math.round(v).toLocaleString()} ms`;
}

/** pct reads a fraction as a percentage: 0.0123 is 1.23%. */
export function pct(v: number | undefined): string {
  if (v === undefined || !isFinite(v)) return "–";
  if (v === 0) return "0%";
  return `${(v * 100).toFixed(v < 0.01 ? 2 : 1)}%`;
}

/** num reads a count or a rate: 1,234 or 12.5. */
export function num(v: number | undefined, digits = 0): string {
  if (v === undefined || !isFinite(v)) return "–";
  return v.toLocaleString(undefined, { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** clock reads seconds as m:ss or h:mm:ss. */
export function clock(s: number): string {
  s = Math.max(0, Math.floor(s));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

/** Tone is how a state or a verdict reads: good, bad, a warning, or neither. */
export type Tone = "good" | "bad" | "warn" | "neutral";

/** Badge shows a short state in its tone, in words (colour is never the only sign). */
export function Badge(props: { tone: Tone; children: ComponentChildren }) {
  return <span class={`badge ${props.tone}`}>{props.children}</span>;
}

/** A column's heading; a numeric column's (num) is set right, as its figures are. */
export type Col = string | { text: string; num: true };

export function numeric(text: string): Col {
  return { text, num: true };
}

/** Table is a table that scrolls sideways on a narrow screen, with a caption for those who do
 * not see it and its columns' headings; children are its rows. */
export function Table(props: { caption: string; cols: Col[]; children: ComponentChildren }) {
  return (
    // A region one can scroll by keyboard, when the table is wider than the screen.
    <div class="scroll" tabIndex={0} role="region" aria-label={props.caption}>
      <table>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.cols.map((c, i) => {
              const text = typeof c === "string" ? c : c.text;
              return (
                <th key={i} scope="col" class={typeof c === "string" ? undefined : "n"}>
                  {text || <span class="visually-hidden">Actions</span>}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** RevisionSelect chooses a revision of a test whose latest is latest: "" for the latest, else
 * an earlier one's number. */
export function RevisionSelect(props: { latest: number; value: string; onChange: (v: string) => void }) {
  const earlier = Array.from({ length: props.latest - 1 }, (_, i): [string, string] => [String(props.latest - 1 - i), String(props.latest - 1 - i)]);
  return <Select label="Revision" value={props.value} onChange={props.onChange} options={[["", `The latest (${props.latest})`], ...earlier]} />;
}

/** ShownOnce shows a secret the server gives once (a token, a code) in a field to select, with a
 * button that copies it; children say what it is. */
export function ShownOnce(props: { label: string; value: string; children: ComponentChildren }) {
  const [copied, setCopied] = useState("");
  async function copy() {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied("Copied.");
    } catch {
      setCopied("The browser refused to copy: select it and copy it by hand.");
    }
  }
  return (
    <div class="shown-once" role="status">
      <p>{props.children}</p>
      <input readOnly aria-label={props.label} value={props.value} onFocus={(e) => e.currentTarget.select()} />{" "}
      <button type="button" class="secondary small" onClick={copy}>Copy</button> <span>{copied}</span>
    </div>
  );
}
