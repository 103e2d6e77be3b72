// Signing in, and signing up with an invitation code.
import { useState } from "preact/hooks";
import { call, type BrowserSession } from "../api";
import { Failure, Field, fieldError, useSubmit } from "../ui";

export function SignIn(props: { onSignedIn: (s: BrowserSession) => void; go: (path: string) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const { submit, busy, error } = useSubmit(async () => {
    props.onSignedIn(await call<BrowserSession>("POST", "/v1/auth/session", { email, password }));
  });
  return (
    <main class="narrow">
      <h1>Sign in to Barrage</h1>
      <form onSubmit={submit}>
        <Field label="Email" type="email" name="email" autocomplete="username" required value={email}
          error={fieldError(error, "email")} onInput={(e) => setEmail(e.currentTarget.value)} />
        <Field label="Password" type="password" name="password" autocomplete="current-password" required value={password}
          error={fieldError(error, "password")} onInput={(e) => setPassword(e.currentTarget.value)} />
        <Failure error={error} />
        <button type="submit" disabled={busy}>Sign in</button>
      </form>
      <p>
        Have an invitation code?{" "}
        <a href="/signup" onClick={(e) => { e.preventDefault(); props.go("/signup"); }}>Sign up</a>
      </p>
    </main>
  );
}

export function SignUp(props: { onSignedIn: (s: BrowserSession) => void; go: (path: string) => void }) {
  const [form, setForm] = useState({ invitation_code: "", email: "", name: "", password: "" });
  const set = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });
  const { submit, busy, error } = useSubmit(async () => {
    await call("POST", "/v1/auth/signup", form);
    props.onSignedIn(await call<BrowserSession>("POST", "/v1/auth/session", { email: form.email, password: form.password }));
  });
  return (
    <main class="narrow">
      <h1>Sign up</h1>
      <p>An admin of this server gives invitation codes; the code says what your license lets you run.</p>
      <form onSubmit={submit}>
        <Field label="Invitation code" name="invitation_code" autocomplete="off" required value={form.invitation_code}
          error={fieldError(error, "invitation_code")} onInput={set("invitation_code")} />
        <Field label="Email" type="email" name="email" autocomplete="email" required value={form.email}
          error={fieldError(error, "email")} onInput={set("email")} />
        <Field label="Name" name="name" autocomplete="name" required value={form.name}
          error={fieldError(error, "name")} onInput={set("name")} />
        <Field label="Password" type="password" name="password" autocomplete="new-password" required minLength={12} value={form.password}
          hint="12 characters at least." error={fieldError(error, "password")} onInput={set("password")} />
        <Failure error={error} />
        <button type="submit" disabled={busy}>Sign up</button>
      </form>
      <p>
        Have an account?{" "}
        <a href="/signin" onClick={(e) => { e.preventDefault(); props.go("/signin"); }}>Sign in</a>
      </p>
    </main>
  );
}
