// The account: the license and what is in use of it, personal API tokens, the password.
import { useEffect, useState } from "preact/hooks";
import { useTitle } from "../nav";
import { call, type APIToken, type MyLicense, type Page, type Run, type User } from "../api";
import { Failure, Field, Section, ShownOnce, Table, date, duration, fieldError, size, useSubmit } from "../ui";

export const quotaNames: Record<string, string> = {
  storage_bytes: "Storage",
  tests: "Tests",
  namespaces: "Namespaces",
  pending_versions: "Plugin versions waiting for review",
  targets: "Targets",
};

export function LicensePage(props: { user: User }) {
  useTitle("License");
  const [lic, setLic] = useState<MyLicense | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [inFlight, setInFlight] = useState<number | null>(null);
  useEffect(() => {
    call<MyLicense>("GET", "/v1/me/license").then(setLic, setError);
    call<Page<Run>>("GET", "/v1/runs?state=queued&state=starting&state=running&limit=200").then((p) => setInFlight(p.items.length), setError);
  }, []);
  return (
    <main>
      <h1>Your license</h1>
      <p class="hint">Your user id is <code>{props.user.id}</code>: an author adds you to their namespace by it.</p>
      {props.user.password_guessed_at && (
        <p class="warning" role="alert">
          Wrong passwords for your account came from many addresses, last on {date(props.user.password_guessed_at)}:
          someone is guessing your password. Addresses you have not signed in from are slowed.
        </p>
      )}
      <Failure error={error} />
      {lic && lic.unlimited && <p>Unlimited: no limits, no quotas.</p>}
      {lic && !lic.unlimited && (
        <>
          <dl class="facts">
            <dt>Plan</dt>
            <dd>{lic.plan}</dd>
            <dt>Virtual users per run</dt>
            <dd>{lic.max_vus}</dd>
            <dt>Longest run</dt>
            <dd>{duration(lic.max_run_duration_seconds ?? 0)}</dd>
            <dt>Runs at a time</dt>
            <dd>
              {lic.max_concurrent_runs}
              {inFlight !== null && `, ${inFlight} in flight now`}
            </dd>
            <dt>Valid until</dt>
            <dd>
              {lic.valid_until && date(lic.valid_until)}
              {lic.expired && <strong> (expired)</strong>}
            </dd>
          </dl>
          {lic.quotas && (
            <Section title="What you keep">
              <table class="quotas">
                <thead>
                  <tr>
                    <th scope="col">Quota</th>
                    <th scope="col">In use</th>
                    <th scope="col">Limit</th>
                  </tr>
                </thead>
                <tbody>
                  {Object.entries(lic.quotas).map(([name, q]) => {
                    const show = name === "storage_bytes" ? size : String;
                    return (
                      <tr key={name}>
                        <th scope="row">{quotaNames[name] ?? name}</th>
                        <td>
                          <meter min={0} max={q.limit} value={q.used} aria-label={`${quotaNames[name] ?? name} in use`} /> {show(q.used)}
                        </td>
                        <td>{show(q.limit)}</td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </Section>
          )}
        </>
      )}
    </main>
  );
}

const scopes = ["read", "write", "plugins:write"] as const;

export function TokensPage() {
  useTitle("API tokens");
  const [tokens, setTokens] = useState<APIToken[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [name, setName] = useState("");
  const [chosen, setChosen] = useState<string[]>(["read"]);
  const [created, setCreated] = useState<(APIToken & { token: string }) | null>(null);
  const load = () => call<Page<APIToken>>("GET", "/v1/tokens").then((p) => setTokens(p.items), setError);
  useEffect(() => {
    load();
  }, []);
  async function create(e: Event) {
    e.preventDefault();
    setError(null);
    try {
      setCreated(await call<APIToken & { token: string }>("POST", "/v1/tokens", { name, scopes: chosen }));
      setName("");
      await load();
    } catch (err) {
      setError(err);
    }
  }
  async function revoke(t: APIToken) {
    setError(null);
    try {
      await call("DELETE", `/v1/tokens/${encodeURIComponent(t.id)}`);
      await load();
    } catch (err) {
      setError(err);
    }
  }
  return (
    <main>
      <h1>Personal API tokens</h1>
      <p>For the command line and CI: <code>barrage</code> takes one in <code>BARRAGE_TOKEN</code>.</p>
      {created && (
        <ShownOnce label="The new token" value={created.token}>
          Token <strong>{created.name}</strong>, shown this once: copy it now.
        </ShownOnce>
      )}
      <form onSubmit={create}>
        <Field label="Name" name="name" required maxLength={100} value={name} error={fieldError(error, "name")}
          onInput={(e) => setName(e.currentTarget.value)} />
        <fieldset>
          <legend>Scopes</legend>
          {scopes.map((s) => (
            <label key={s} class="check">
              <input type="checkbox" name="scopes" value={s} checked={chosen.includes(s)}
                onChange={(e) => setChosen(e.currentTarget.checked ? [...chosen, s] : chosen.filter((c) => c !== s))} />
              {s}
            </label>
          ))}
        </fieldset>
        <Failure error={error} />
        <button type="submit">Create a token</button>
      </form>
      {tokens && tokens.length === 0 && <p>No tokens.</p>}
      {tokens && tokens.length > 0 && (
        <Table caption="Your personal API tokens" cols={["Name", "Scopes", "Created", "Last used", "Expires", ""]}>
          {tokens.map((t) => (
            <tr key={t.id}>
              <td>{t.name}</td>
              <td>{t.scopes.join(", ")}</td>
              <td>{date(t.created_at)}</td>
              <td>{t.last_used_at ? date(t.last_used_at) : "never"}</td>
              <td>{t.expires_at ? date(t.expires_at) : "never"}</td>
              <td>
                <button type="button" class="secondary" onClick={() => revoke(t)} aria-label={`Revoke ${t.name}`}>Revoke</button>
              </td>
            </tr>
          ))}
        </Table>
      )}
    </main>
  );
}

export function PasswordPage(props: { onChanged: () => void }) {
  useTitle("Password");
  const [form, setForm] = useState({ current_password: "", new_password: "", revoke_tokens: false });
  const { submit, busy, error } = useSubmit(async () => {
    await call("PATCH", "/v1/me", form);
    props.onChanged();
  });
  return (
    <main class="narrow">
      <h1>Change your password</h1>
      <p>Every session is signed out, this one too: you sign in again with the new password.</p>
      <form onSubmit={submit}>
        <Field label="Current password" type="password" autocomplete="current-password" required value={form.current_password}
          error={fieldError(error, "current_password")} onInput={(e) => setForm({ ...form, current_password: e.currentTarget.value })} />
        <Field label="New password" type="password" autocomplete="new-password" required minLength={12} value={form.new_password}
          hint="12 characters at least." error={fieldError(error, "new_password")}
          onInput={(e) => setForm({ ...form, new_password: e.currentTarget.value })} />
        <label class="check">
          <input type="checkbox" checked={form.revoke_tokens} onChange={(e) => setForm({ ...form, revoke_tokens: e.currentTarget.checked })} />
          Revoke my personal API tokens too
        </label>
        <Failure error={error} />
        <button type="submit" disabled={busy}>Change the password</button>
      </form>
    </main>
  );
}
