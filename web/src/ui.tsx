// Pieces every page uses: a labelled field that shows the server's reason for it, a form's
// general error, and how numbers and sizes read.
import type { ComponentChildren, InputHTMLAttributes } from "preact";
import { useId, useState } from "preact/hooks";
import { Problem } from "./api";

/** Field is a labelled input; error is the server's reason for it, shown under it. */
export function Field(props: {
  label: string;
  error?: string;
  hint?: string;
} & InputHTMLAttributes<HTMLInputElement>) {
  const { label, error, hint, ...input } = props;
  const id = useId();
  const note = error ?? hint;
  return (
    <div class={error ? "field invalid" : "field"}>
      <label for={id}>{label}</label>
      <input id={id} aria-invalid={error ? true : undefined} aria-describedby={note ? id + "-note" : undefined} {...input} />
      {note && (
        <p id={id + "-note"} class={error ? "error" : "hint"}>
          {note}
        </p>
      )}
    </div>
  );
}

/** Failure says what went wrong with a whole form: the problem's detail, or its title. */
export function Failure(props: { error: unknown }) {
  const e = props.error;
  if (!e) return null;
  const text = e instanceof Problem ? e.detail || e.title : "The server could not be reached: " + String(e);
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
