// The admin console: invitation codes, users and their licenses, shared agents, the plugin
// review queue and reserved namespaces, and the targets the operator opened. Every page reads
// the admin routes of the API, which answer 403 to anyone else: a page opened by another user
// shows that refusal and nothing more.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import {
  call, query, type AdminUser, type Agent, type CreatedAgent, type CreatedInvitation, type Invitation, type MyLicense,
  type Namespace, type Page, type PingResult, type Plugin, type PluginVersion, type TargetSettings, type User,
} from "../api";
import { Link, navigate, useTitle } from "../nav";
import { Badge, Failure, Field, Section, Select, ShownOnce, Table, TextArea, useAction, date, duration, fieldError, num, numeric, size, useLoad, useSubmit, type Tone } from "../ui";
import { quotaNames } from "./account";
import { Artifacts, ConfigPreview, kindNames } from "./market";

/** The console's pages, in its own navigation. */
const pages: [string, string][] = [
  ["/admin/invitations", "Invitations"],
  ["/admin/users", "Users"],
  ["/admin/agents", "Shared agents"],
  ["/admin/plugins", "Plugin review"],
  ["/admin/targets", "Targets"],
];

function AdminNav(props: { here: string }) {
  return (
    <nav aria-label="Admin" class="subnav">
      {pages.map(([path, title]) => (
        <Link key={path} href={path} aria-current={path === props.here ? "page" : undefined}>{title}</Link>
      ))}
    </nav>
  );
}

function AdminPage(props: { here: string; title: string; children: ComponentChildren }) {
  useTitle(props.title);
  return (
    <main class="wide">
      <AdminNav here={props.here} />
      <h1>{props.title}</h1>
      {props.children}
    </main>
  );
}

const stateTone: Record<Invitation["state"], Tone> = { active: "good", spent: "neutral", expired: "neutral", revoked: "bad" };

/** InvitationsPage issues invitation codes and lists them, with who used them; an active one
 * may be revoked. */
export function InvitationsPage() {
  const list = useLoad(() => call<Page<Invitation>>("GET", "/v1/admin/invitations" + query({ limit: 100 })), []);
  const [role, setRole] = useState("user");
  const [template, setTemplate] = useState("demo");
  const [limits, setLimits] = useState({ vus: "100", minutes: "30", concurrent: "2", days: "14" });
  const [uses, setUses] = useState("1");
  const [days, setDays] = useState("7");
  const [note, setNote] = useState("");
  const [made, setMade] = useState<CreatedInvitation | null>(null);
  const issue = useSubmit(async () => {
    setMade(null);
    const license = template === "demo" ? { template: "demo" } : template === "custom" ? {
      max_vus: Number(limits.vus), max_run_duration_seconds: Number(limits.minutes) * 60,
      max_concurrent_runs: Number(limits.concurrent), valid_days: Number(limits.days),
    } : undefined;
    const body: Record<string, unknown> = { role, uses: Number(uses), expires_in_days: Number(days), note };
    if (license) body.license = license;
    setMade(await call<CreatedInvitation>("POST", "/v1/admin/invitations", body));
    list.reload();
  });
  const revoking = useAction();
  const revoke = revoking.act(async (id: string) => {
    await call("DELETE", `/v1/admin/invitations/${id}`);
    list.reload();
  });
  const err = (f: string) => fieldError(issue.error, f);
  return (
    <AdminPage here="/admin/invitations" title="Invitations">
      <Section title="Issue an invitation">
        <form onSubmit={issue.submit}>
          <Select label="Role" value={role} onChange={setRole} options={[["user", "User"], ["admin", "Admin"]]} />
          <Select label="License" value={template} onChange={setTemplate}
            options={[["demo", "Demo: 100 virtual users, 30 min runs, for 14 days"], ["custom", "Custom limits"], ...(role === "admin" ? [["none", "None: unlimited"] as [string, string]] : [])]} />
          {template === "custom" && (
            <fieldset>
              <legend>Limits</legend>
              <Field label="Virtual users per run" type="number" min={1} value={limits.vus} error={err("license.max_vus")}
                onInput={(e) => setLimits({ ...limits, vus: (e.target as HTMLInputElement).value })} />
              <Field label="Longest run (minutes)" type="number" min={1} value={limits.minutes} error={err("license.max_run_duration_seconds")}
                onInput={(e) => setLimits({ ...limits, minutes: (e.target as HTMLInputElement).value })} />
              <Field label="Runs at a time" type="number" min={1} value={limits.concurrent} error={err("license.max_concurrent_runs")}
                onInput={(e) => setLimits({ ...limits, concurrent: (e.target as HTMLInputElement).value })} />
              <Field label="Valid for (days)" type="number" min={1} value={limits.days} error={err("license.valid_days")}
                onInput={(e) => setLimits({ ...limits, days: (e.target as HTMLInputElement).value })} />
            </fieldset>
          )}
          <Field label="Uses" type="number" min={1} max={10000} value={uses} error={err("uses")} hint="How many accounts the code may make."
            onInput={(e) => setUses((e.target as HTMLInputElement).value)} />
          <Field label="Expires in (days)" type="number" min={1} max={365} value={days} error={err("expires_in_days")}
            onInput={(e) => setDays((e.target as HTMLInputElement).value)} />
          <Field label="Note" value={note} maxLength={500} error={err("note")} hint="For you: who it is for."
            onInput={(e) => setNote((e.target as HTMLInputElement).value)} />
          <Failure error={issue.error} />
          <button type="submit" disabled={issue.busy}>Issue the invitation</button>
        </form>
        {made && <ShownOnce label="The new invitation code" value={made.code}>The invitation code, shown this once: it is not kept, and cannot be shown again.</ShownOnce>}
      </Section>
      <Section title="Issued">
        <Failure error={list.error || revoking.error} />
        {list.data && (
          <Table caption="Invitations" cols={["Issued", "Role", "License", "State", numeric("Uses left"), "Used by", "Expires", "Note", ""]}>
            {list.data.items.map((i) => (
              <tr key={i.id}>
                <td>{date(i.created_at)}</td>
                <td>{i.role}</td>
                <td>{i.license ? `${i.license.plan}: ${i.license.max_vus} VUs, ${duration(i.license.max_run_duration_seconds)}` : "unlimited"}</td>
                <td><Badge tone={stateTone[i.state]}>{i.state}</Badge></td>
                <td class="n">{i.uses_left} of {i.uses_total}</td>
                <td>{i.used_by.length ? i.used_by.map((u) => <div key={u.user_id}><Link href={`/admin/users/${u.user_id}`}>{u.email}</Link></div>) : "–"}</td>
                <td>{date(i.expires_at)}</td>
                <td>{i.note}</td>
                <td>{i.state === "active" && <button type="button" class="secondary small" aria-label={i.note ? `Revoke the invitation “${i.note}”` : `Revoke the invitation issued ${date(i.created_at)}`} onClick={() => revoke(i.id)}>Revoke</button>}</td>
              </tr>
            ))}
          </Table>
        )}
      </Section>
    </AdminPage>
  );
}

/** UsersPage finds users by email or name; the search is in the page's address. */
export function UsersPage(props: { query: URLSearchParams }) {
  const asked = props.query.get("q") ?? "";
  const [q, setQ] = useState(asked);
  const users = useLoad(() => call<Page<User>>("GET", "/v1/admin/users" + query({ q: asked, limit: 100 })), [asked]);
  const setAsked = (v: string) => navigate("/admin/users" + (v ? "?q=" + encodeURIComponent(v) : ""), true);
  return (
    <AdminPage here="/admin/users" title="Users">
      <form class="filters" role="search" aria-label="Find users" onSubmit={(e) => { e.preventDefault(); setAsked(q.trim()); }}>
        <Field label="Email or name" type="search" value={q} onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
        <button type="submit">Find</button>
      </form>
      <Failure error={users.error} />
      {users.data && (users.data.items.length === 0 ? <p>No user matches.</p> : (
        <Table caption="Users" cols={["Email", "Name", "Role", "License", "State", "Since"]}>
          {users.data.items.map((u) => (
            <tr key={u.id}>
              <td><Link href={`/admin/users/${u.id}`}>{u.email}</Link></td>
              <td>{u.name}</td>
              <td>{u.role}</td>
              <td>{licenseText(u)}</td>
              <td>{u.disabled ? <Badge tone="bad">disabled</Badge> : <Badge tone="good">enabled</Badge>}</td>
              <td>{date(u.created_at)}</td>
            </tr>
          ))}
        </Table>
      ))}
    </AdminPage>
  );
}

function licenseText(u: User): string {
  const l = u.license;
  if (!l || l.unlimited) return "unlimited";
  return `${l.plan}: ${l.max_vus} VUs${l.expired ? ", expired" : ""}`;
}

/** UserPage is one user: their license and what they keep of it, their tokens and runs; an
 * admin disables or enables them and changes their license. */
export function UserPage(props: { id: string; me: User }) {
  const user = useLoad(() => call<AdminUser>("GET", `/v1/admin/users/${props.id}`), [props.id]);
  const lic = useLoad(() => call<MyLicense>("GET", `/v1/admin/users/${props.id}/license`), [props.id]);
  const u = user.data;
  const patching = useAction();
  const patch = patching.act(async (body: unknown) => {
    await call<User>("PATCH", `/v1/admin/users/${props.id}`, body);
    user.reload();
    lic.reload();
  });
  return (
    <AdminPage here="/admin/users" title={u ? u.email : "A user"}>
      <Failure error={user.error} />
      {u && (
        <>
          <dl class="facts">
            <div><dt>Name</dt><dd>{u.name}</dd></div>
            <div><dt>User id</dt><dd><code>{u.id}</code></dd></div>
            <div><dt>Role</dt><dd>{u.role}</dd></div>
            <div><dt>State</dt><dd>{u.disabled ? <Badge tone="bad">disabled</Badge> : <Badge tone="good">enabled</Badge>}</dd></div>
            <div><dt>Since</dt><dd>{date(u.created_at)}</dd></div>
            <div><dt>Personal API tokens</dt><dd>{num(u.tokens)}</dd></div>
            <div><dt>Runs</dt><dd>{num(u.runs)}{u.last_run_at && `, the last ${date(u.last_run_at)}`}</dd></div>
            <div><dt>License</dt><dd>{licenseText(u)}{u.license?.valid_until && `, valid until ${date(u.license.valid_until)}`}</dd></div>
          </dl>
          {lic.data?.quotas && (
            <Table caption="What they keep" cols={["Quota", numeric("In use"), numeric("Limit")]}>
              {Object.entries(lic.data.quotas).map(([name, q]) => (
                <tr key={name}>
                  <td>{quotaNames[name] ?? name}</td>
                  <td class="n">{name === "storage_bytes" ? size(q.used) : q.used}</td>
                  <td class="n">{name === "storage_bytes" ? size(q.limit) : q.limit}</td>
                </tr>
              ))}
            </Table>
          )}
          <Failure error={patching.error} />
          {u.id !== props.me.id && (
            <p class="actions">
              {u.disabled
                ? <button type="button" onClick={() => patch({ disabled: false })}>Enable the account</button>
                : <button type="button" class="danger" onClick={() => patch({ disabled: true })}>Disable the account</button>}
            </p>
          )}
          {u.disabled && <p class="hint">Disabling signed them out everywhere and revoked their personal API tokens for good.</p>}
          <LicenseForm onSave={(l) => patch({ license: l })} />
        </>
      )}
    </AdminPage>
  );
}

function LicenseForm(props: { onSave: (license: unknown) => Promise<void> }) {
  const [f, setF] = useState({ template: "", plan: "", vus: "", minutes: "", concurrent: "", until: "" });
  const save = useSubmit(async () => {
    const l: Record<string, unknown> = {};
    if (f.template) l.template = f.template;
    if (f.plan) l.plan = f.plan;
    if (f.vus) l.max_vus = Number(f.vus);
    if (f.minutes) l.max_run_duration_seconds = Number(f.minutes) * 60;
    if (f.concurrent) l.max_concurrent_runs = Number(f.concurrent);
    if (f.until) l.valid_until = new Date(f.until + "T23:59:59").toISOString();
    await props.onSave(l);
  });
  const set = (k: keyof typeof f) => (e: Event) => setF({ ...f, [k]: (e.target as HTMLInputElement).value });
  return (
    <Section title="Change the license">
      <p class="hint">What you fill in replaces that limit; what you leave empty stays as it is. A template starts from its limits, valid from now.</p>
      <form onSubmit={save.submit}>
        <Select label="Start from" value={f.template} onChange={(v) => setF({ ...f, template: v })} options={[["", "The license as it is"], ["demo", "The demo template"]]} />
        <Field label="Plan" value={f.plan} onInput={set("plan")} />
        <Field label="Virtual users per run" type="number" min={1} value={f.vus} onInput={set("vus")} />
        <Field label="Longest run (minutes)" type="number" min={1} value={f.minutes} onInput={set("minutes")} />
        <Field label="Runs at a time" type="number" min={1} value={f.concurrent} onInput={set("concurrent")} />
        <Field label="Valid until" type="date" value={f.until} onInput={set("until")} />
        <Failure error={save.error} />
        <button type="submit" disabled={save.busy}>Save the license</button>
      </form>
    </Section>
  );
}

/** AgentsPage lists every agent, registers shared ones (the token shown once), pings and
 * retires them. */
export function AgentsPage() {
  const agents = useLoad(() => call<Page<Agent>>("GET", "/v1/admin/agents"), []);
  const [name, setName] = useState("");
  const [vus, setVus] = useState("");
  const [minutes, setMinutes] = useState("");
  const [made, setMade] = useState<CreatedAgent | null>(null);
  const register = useSubmit(async () => {
    setMade(null);
    const body: Record<string, unknown> = { name: name.trim() };
    if (vus) body.max_vus = Number(vus);
    if (minutes) body.max_run_duration_seconds = Number(minutes) * 60;
    setMade(await call<CreatedAgent>("POST", "/v1/admin/agents", body));
    setName("");
    agents.reload();
  });
  const [pings, setPings] = useState<Record<string, string>>({});
  const retiring = useAction();
  async function ping(a: Agent) {
    setPings({ ...pings, [a.id]: "pinging…" });
    try {
      const r = await call<PingResult>("POST", `/v1/agents/${a.id}/ping`);
      setPings((p) => ({ ...p, [a.id]: `answered in ${r.round_trip_ms.toFixed(1)} ms` }));
    } catch (e) {
      setPings((p) => ({ ...p, [a.id]: e instanceof Error ? e.message : String(e) }));
    }
  }
  const retire = retiring.act(async (a: Agent) => {
    await call("DELETE", `/v1/admin/agents/${a.id}`);
    agents.reload();
  });
  return (
    <AdminPage here="/admin/agents" title="Agents">
      <Failure error={agents.error || retiring.error} />
      {agents.data && (
        <Table caption="Agents" cols={["Name", "Kind", "State", "Version", numeric("Cores"), "Limits per job", "Sandbox", "Last contact", ""]}>
          {agents.data.items.map((a) => (
            <tr key={a.id}>
              <td>{a.name}</td>
              <td>{a.shared ? "shared" : "private"}</td>
              <td><Badge tone={a.state === "online" ? "good" : a.state === "busy" ? "warn" : "neutral"}>{a.state}</Badge></td>
              <td>{a.version || "–"}{a.protocol ? ` (protocol ${a.protocol})` : ""}</td>
              <td class="n">{a.cores || "–"}</td>
              <td>{a.max_vus ? `${a.max_vus} VUs` : "no VU limit"}, {a.max_run_duration_seconds ? duration(a.max_run_duration_seconds) : "no time limit"}</td>
              <td>{a.sandbox ? <Badge tone="good">held</Badge> : <Badge tone="warn">not held</Badge>}</td>
              <td>{a.last_seen_at ? date(a.last_seen_at) : "never"}</td>
              <td>
                {a.shared && (
                  <>
                    <button type="button" class="secondary small" aria-label={`Ping ${a.name}`} onClick={() => ping(a)}>Ping</button>{" "}
                    <button type="button" class="secondary small" aria-label={`Retire ${a.name}`} onClick={() => retire(a)}>Retire</button>
                    {pings[a.id] && <div role="status">{pings[a.id]}</div>}
                  </>
                )}
              </td>
            </tr>
          ))}
        </Table>
      )}
      <p class="hint">
        A shared agent without the kernel sandbox runs only the plugins admins published.{" "}
        <button type="button" class="secondary small" onClick={agents.reload}>Refresh</button>
      </p>
      <Section title="Register a shared agent">
        <form onSubmit={register.submit}>
          <Field label="Name" value={name} required maxLength={100} error={fieldError(register.error, "name")}
            onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          <Field label="Virtual users per job" type="number" min={1} value={vus} hint="Empty: no limit of its own. The demo agent's is 500."
            error={fieldError(register.error, "max_vus")} onInput={(e) => setVus((e.target as HTMLInputElement).value)} />
          <Field label="Longest job (minutes)" type="number" min={1} value={minutes} hint="Empty: no limit of its own. The demo agent's is 5."
            error={fieldError(register.error, "max_run_duration_seconds")} onInput={(e) => setMinutes((e.target as HTMLInputElement).value)} />
          <Failure error={fieldError(register.error, "name") ? null : register.error} />
          <button type="submit" disabled={register.busy}>Register the agent</button>
        </form>
        {made && (
          <>
            <ShownOnce label="The new agent token" value={made.token}>The agent token of <strong>{made.name}</strong>, shown this once: it is not kept, and cannot be shown again.</ShownOnce>
            <p>Start it where it is to run: <code>BARRAGE_AGENT_TOKEN=… barrage agent --server {location.origin} --allow-target HOST:PORT</code> (see docs/agents.md)</p>
          </>
        )}
      </Section>
    </AdminPage>
  );
}

/** previous is the version of p reviewed before v: the highest lower than v that is not
 * pending (p.versions are highest first). */
function previous(p: Plugin, v: PluginVersion): PluginVersion | undefined {
  const i = p.versions.findIndex((x) => x.version === v.version);
  return p.versions.slice(i + 1).find((x) => x.state !== "pending" && x.state !== "rejected") ?? p.versions.slice(i + 1)[0];
}

/** manifest is what a reviewer compares between versions, field by field. */
function manifest(v: PluginVersion): Record<string, string> {
  return {
    kinds: v.kinds.join(", "),
    description: v.description,
    license: v.license,
    "source URL": v.source_url,
    tags: v.tags.join(", "),
    protocols: v.protocols.join(", "),
    network: v.network.join(", ") || "none",
    platforms: v.artifacts.map((a) => `${a.os}/${a.arch} (${a.format})`).join(", "),
    "config schema": v.config_schema || "any object",
    signer: v.signer,
  };
}

/** ReviewPage is the review queue: each pending version with its manifest, its artifacts and
 * their digests, the network it asks for and what changed since the version before; approve,
 * or reject with a reason. Reserved namespaces below. */
export function ReviewPage() {
  const queue = useLoad(async () => {
    const pending = await call<{ items: PluginVersion[] }>("GET", "/v1/admin/plugin-versions" + query({ limit: 50 }));
    return Promise.all(pending.items.map(async (v) => ({ v, plugin: await call<Plugin>("GET", `/v1/plugins/${v.namespace}/${v.name}`) })));
  }, []);
  return (
    <AdminPage here="/admin/plugins" title="Plugin review">
      <Failure error={queue.error} />
      {queue.data && (queue.data.length === 0 ? <p>No version waits for review.</p>
        : queue.data.map(({ v, plugin }) => <Pending key={`${v.namespace}/${v.name}@${v.version}`} v={v} before={previous(plugin, v)} onDone={queue.reload} />))}
      <p class="hint">To deprecate or revoke a published version, open its plugin's page from the <Link href="/plugins">marketplace</Link>.</p>
      <Reserved />
    </AdminPage>
  );
}

function Pending(props: { v: PluginVersion; before?: PluginVersion; onDone: () => void }) {
  const v = props.v;
  const full = `${v.namespace}/${v.name}@${v.version}`;
  const [reason, setReason] = useState("");
  const act = (verb: "approve" | "reject") => async () => {
    await call("POST", `/v1/admin/plugins/${v.namespace}/${v.name}/versions/${v.version}/${verb}`, verb === "reject" ? { reason: reason.trim() } : undefined);
    props.onDone();
  };
  const approve = useSubmit(act("approve"));
  const reject = useSubmit(act("reject"));
  const now = manifest(v);
  const was = props.before ? manifest(props.before) : undefined;
  return (
    <section class="review" aria-label={`Review of ${full}`}>
      <h2><Link href={`/plugins/${v.namespace}/${v.name}`}>{full}</Link></h2>
      <p>{v.kinds.map((k) => kindNames[k]).join(", ")}, published {date(v.created_at)}.</p>
      <Table caption={`What ${full} says of itself${was ? `, beside ${props.before!.version}` : ""}`}
        cols={["Field", "This version", was ? `Version ${props.before!.version}` : "Before"]}>
        {Object.entries(now).map(([k, val]) => {
          const changed = was !== undefined && was[k] !== val;
          return (
            <tr key={k} class={changed ? "changed" : undefined}>
              <th scope="row">{k}{changed && <> <Badge tone="warn">changed</Badge></>}</th>
              <td><code class="wrap">{val}</code></td>
              <td>{was ? <code class="wrap">{was[k]}</code> : "the first version"}</td>
            </tr>
          );
        })}
      </Table>
      {v.network.length > 0 && <p class="warning" role="note">It asks to reach {v.network.join(", ")}: runs grant it that network.</p>}
      <Artifacts v={v} caption={`The artifacts of ${full}`} />
      <ConfigPreview schema={v.config_schema} />
      <details>
        <summary>
          Its README, as its author wrote it{props.before && props.before.readme !== v.readme && <> <Badge tone="warn">changed</Badge></>}
        </summary>
        <pre class="source">{v.readme || "(none)"}</pre>
      </details>
      <div class="actions">
        <form onSubmit={approve.submit} class="inline">
          <button type="submit" disabled={approve.busy} aria-label={`Approve ${full}`}>Approve</button>
        </form>
        <form onSubmit={reject.submit} class="inline">
          <Field label={`Why reject ${full}`} value={reason} required maxLength={1000} error={fieldError(reject.error, "reason")}
            onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
          <button type="submit" class="danger" disabled={reject.busy} aria-label={`Reject ${full}`}>Reject</button>
        </form>
      </div>
      <Failure error={approve.error || (fieldError(reject.error, "reason") ? null : reject.error)} />
    </section>
  );
}

function Reserved() {
  const list = useLoad(() => call<{ items: Namespace[] }>("GET", "/v1/admin/namespaces"), []);
  const [name, setName] = useState("");
  const [reason, setReason] = useState("");
  const reserve = useSubmit(async () => {
    const body: Record<string, unknown> = { name: name.trim() };
    if (reason.trim()) body.reason = reason.trim();
    await call("POST", "/v1/admin/namespaces", body);
    setName("");
    setReason("");
    list.reload();
  });
  return (
    <Section title="Reserved namespaces">
      <p class="hint">A reserved namespace is the service's: nobody else may claim it. Taking one a user claimed needs a reason: they lose it and its keys are retired.</p>
      <Failure error={list.error} />
      {list.data && (list.data.items.length === 0 ? <p>None reserved.</p> : (
        <ul class="plain">
          {list.data.items.map((n) => <li key={n.name}><Link href={`/namespaces/${n.name}`}>{n.name}</Link>{n.reserved_reason && `: ${n.reserved_reason}`}</li>)}
        </ul>
      ))}
      <form onSubmit={reserve.submit}>
        <Field label="Namespace to reserve" value={name} required maxLength={64} error={fieldError(reserve.error, "name")}
          onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        <TextArea label="Reason, to take it from a user" value={reason} rows={2} error={fieldError(reserve.error, "reason")}
          onInput={(e) => setReason((e.target as HTMLTextAreaElement).value)} />
        <Failure error={fieldError(reserve.error, "name") || fieldError(reserve.error, "reason") ? null : reserve.error} />
        <button type="submit" disabled={reserve.busy}>Reserve it</button>
      </form>
    </Section>
  );
}

/** TargetsPage shows the targets the operator opened to every user's runs, and the cap on
 * virtual users per address. */
export function TargetsPage() {
  const t = useLoad(() => call<TargetSettings>("GET", "/v1/admin/targets"), []);
  const s = t.data;
  return (
    <AdminPage here="/admin/targets" title="Targets">
      <p class="hint">
        Runs on shared agents reach only targets their user proved to control, and those the operator opened
        (<code>--open-targets</code>, set when the server starts).
      </p>
      <Failure error={t.error} />
      {s && (
        <dl class="facts">
          <div><dt>Opened to everyone</dt><dd>{s.open_all ? "Every target: the operator opened them all (*)" : s.open.length ? s.open.map((o) => <code key={o}>{o} </code>) : "None"}</dd></div>
          <div><dt>Virtual users per address</dt><dd>{s.max_vus_per_address ? `at most ${num(s.max_vus_per_address)}, all users' runs together` : "no cap"}</dd></div>
        </dl>
      )}
    </AdminPage>
  );
}
