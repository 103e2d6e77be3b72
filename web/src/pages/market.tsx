// The marketplace: finding a plugin (words, kind, tag, protocol, platform; by name, downloads,
// runs or newest), and a plugin's page: its README, its versions and their state, each version's
// platforms with their digests, its signer, the network it asks for, its config as a form, and
// how to use it.
import { useState } from "preact/hooks";
import { call, loadPages, type User, type Plugin, type PluginKind, type PluginSummary, type PluginVersion, type PluginVersionState } from "../api";
import { Link, navigate, useTitle } from "../nav";
import { Badge, Failure, Field, Section, Select, Table, date, fieldError, num, numeric, size, useLoad, useSubmit, type Tone } from "../ui";

export const kindNames: Record<PluginKind, string> = {
  "session-element": "Session element",
  url: "URL",
  "source-modifier": "Source modifier",
};

const sorts: [string, string][] = [
  ["name", "Name"],
  ["downloads", "Most downloaded"],
  ["runs", "Most run"],
  ["newest", "Newest"],
];

/** MarketPage finds plugins; the search is in the page's address, to share or reload. */
export function MarketPage(props: { query: URLSearchParams }) {
  useTitle("Marketplace");
  const q = props.query;
  const get = (k: string) => q.get(k) ?? "";
  const [words, setWords] = useState(get("q"));
  const [tag, setTag] = useState(get("tag"));
  const [pages, setPages] = useState<string[]>([]);
  const filter = { q: get("q"), kind: get("kind"), tag: get("tag"), protocol: get("protocol"), platform: get("platform"), sort: get("sort") };
  const key = JSON.stringify(filter);
  const found = useLoad(() => loadPages<PluginSummary>("/v1/plugins", filter, pages), [key, pages.length]);
  const go = (changes: Record<string, string>) => {
    const n = new URLSearchParams(q);
    for (const [k, v] of Object.entries(changes)) {
      if (v) n.set(k, v);
      else n.delete(k);
    }
    setPages([]);
    const s = n.toString();
    navigate("/plugins" + (s ? "?" + s : ""), true);
  };
  const filtered = Object.entries(filter).some(([k, v]) => k !== "sort" && v);
  return (
    <main class="wide">
      <h1>Marketplace</h1>
      <p class="hint">
        Plugins that generate data, sign requests or change a script, published by their authors, signed, and reviewed
        before anyone may run them. <Link href="/namespaces">Publish your own</Link>.
      </p>
      <form class="filters" role="search" aria-label="Find plugins" onSubmit={(e) => { e.preventDefault(); go({ q: words.trim(), tag: tag.trim() }); }}>
        <Field label="Words" type="search" value={words} onInput={(e) => setWords((e.target as HTMLInputElement).value)} />
        <Select label="Kind" value={filter.kind} onChange={(v) => go({ kind: v })}
          options={[["", "Any kind"], ...Object.entries(kindNames)]} />
        <Field label="Tag" value={tag} onInput={(e) => setTag((e.target as HTMLInputElement).value)} />
        <Select label="Platform" value={filter.platform} onChange={(v) => go({ platform: v })}
          options={[["", "Any platform"], ["linux/amd64", "linux/amd64"], ["linux/arm64", "linux/arm64"]]} />
        <Select label="Protocol" value={filter.protocol} onChange={(v) => go({ protocol: v })}
          options={[["", "Any protocol"], ["1", "Protocol 1"]]} />
        <Select label="Order" value={filter.sort || "name"} onChange={(v) => go({ sort: v === "name" ? "" : v })} options={sorts} />
        <button type="submit">Search</button>
      </form>
      <Failure error={found.error} />
      {found.data && (found.data.items.length === 0
        ? <p>{filtered ? "No plugin matches this search." : "No plugin is published yet."}</p>
        : (
          <Table caption="Plugins found" cols={["Plugin", "Latest", "Kinds", "Description", numeric("Downloads"), numeric("Runs")]}>
            {found.data.items.map((p) => (
              <tr key={p.namespace + "/" + p.name}>
                <td><Link href={`/plugins/${p.namespace}/${p.name}`}>{p.namespace}/{p.name}</Link></td>
                <td>{p.latest}{!p.listed && <> <Badge tone="warn">not listed</Badge></>}</td>
                <td>{p.kinds.map((k) => kindNames[k]).join(", ")}</td>
                <td>{p.description}{p.tags.length > 0 && <><br /><small>{p.tags.map((t) => "#" + t).join(" ")}</small></>}</td>
                <td class="n">{num(p.downloads)}</td>
                <td class="n">{num(p.runs)}</td>
              </tr>
            ))}
          </Table>
        ))}
      {found.data?.next && (
        <button type="button" class="secondary" onClick={() => setPages([...pages, found.data!.next!])}>More plugins</button>
      )}
    </main>
  );
}

const stateTone: Record<PluginVersionState, Tone> = {
  pending: "warn",
  published: "good",
  rejected: "bad",
  deprecated: "warn",
  revoked: "bad",
};

/** VersionState shows a version's state, with the reason a reviewer or its author gave. */
export function VersionState(props: { v: PluginVersion }) {
  const v = props.v;
  return (
    <>
      <Badge tone={stateTone[v.state]}>{v.state}</Badge>
      {v.state_reason && <> {v.state_reason}</>}
    </>
  );
}

/** alias is the local name a script gives the plugin by default: its name as an identifier. */
export function alias(name: string): string {
  return name.replace(/-/g, "_");
}

/** snippet is the script's lines that use version v of a plugin, by a range (^) or exactly. */
export function snippet(v: PluginVersion, range: boolean): string {
  const use = `${v.namespace}/${v.name}@${range ? "^" + v.version.replace(/[-+].*$/, "") : v.version}`;
  const network = v.network.length ? `, network: [${v.network.map((n) => JSON.stringify(n)).join(", ")}]` : "";
  return `plugins:\n  - { use: ${use}, as: ${alias(v.name)}, kind: ${v.kinds[0]}${network} }\n`;
}

/** PluginPage is a plugin's page: what it is, its README, and its versions. */
export function PluginPage(props: { namespace: string; name: string; user: User }) {
  const full = `${props.namespace}/${props.name}`;
  useTitle(full);
  const plugin = useLoad(() => call<Plugin>("GET", `/v1/plugins/${props.namespace}/${props.name}`), [full]);
  const [picked, setPicked] = useState("");
  const p = plugin.data;
  const shown = p?.versions.find((v) => v.version === (picked || p.latest)) ?? p?.versions[0];
  return (
    <main class="wide">
      <h1>{full}</h1>
      <Failure error={plugin.error} />
      {p && (
        <>
          <p>{p.description}</p>
          <dl class="facts">
            <div><dt>Kinds</dt><dd>{p.kinds.map((k) => kindNames[k]).join(", ")}</dd></div>
            <div><dt>License</dt><dd>{p.license || "–"}</dd></div>
            <div><dt>Source</dt><dd>{p.source_url ? <SourceLink url={p.source_url} /> : "–"}</dd></div>
            <div><dt>Tags</dt><dd>{p.tags.length ? p.tags.map((t) => <span key={t}><Link href={`/plugins?tag=${encodeURIComponent(t)}`}>#{t}</Link> </span>) : "–"}</dd></div>
            <div><dt>Downloads</dt><dd>{num(p.downloads)}</dd></div>
            <div><dt>Runs</dt><dd>{num(p.runs)}</dd></div>
          </dl>
          <Section title="Versions">
            <Table caption="Versions" cols={["Version", "State", "Published", numeric("Downloads"), numeric("Runs")]}>
              {p.versions.map((v) => (
                <tr key={v.version} class={v === shown ? "picked" : undefined}>
                  <td>
                    <button type="button" class="link" aria-pressed={v === shown} onClick={() => setPicked(v.version)}>{v.version}</button>
                  </td>
                  <td><VersionState v={v} /></td>
                  <td>{date(v.created_at)}</td>
                  <td class="n">{num(v.downloads)}</td>
                  <td class="n">{num(v.runs)}</td>
                </tr>
              ))}
            </Table>
          </Section>
          {shown && <VersionDetails v={shown} />}
          {shown && props.user.role === "admin" && <AdminActions v={shown} onDone={plugin.reload} />}
          <Section title="README">
            <README source={shown?.readme ?? p.readme} />
          </Section>
        </>
      )}
    </main>
  );
}

/** README shows a README, with the Markdown parser loaded when first needed: no other page
 * needs it. */
function README(props: { source: string }) {
  const md = useLoad(() => import("../markdown"), []);
  if (md.error) return <Failure error={md.error} />;
  return md.data ? <md.data.Markdown source={props.source} top={3} /> : <p aria-busy="true">Loading…</p>;
}

/** SourceLink links to a plugin's source, when it is on the web. */
function SourceLink(props: { url: string }) {
  const ok = /^https?:\/\//i.test(props.url);
  return ok ? <a href={props.url} rel="noopener nofollow">{props.url}</a> : <>{props.url}</>;
}

/** AdminActions deprecates or revokes version v, with a reason everyone who uses it is shown. */
function AdminActions(props: { v: PluginVersion; onDone: () => void }) {
  const v = props.v;
  const [reason, setReason] = useState("");
  const act = (verb: "deprecate" | "revoke") => async () => {
    const path = verb === "deprecate" ? `/v1/plugins/${v.namespace}/${v.name}/versions/${v.version}/deprecate`
      : `/v1/admin/plugins/${v.namespace}/${v.name}/versions/${v.version}/revoke`;
    await call("POST", path, { reason: reason.trim() });
    setReason("");
    props.onDone();
  };
  const deprecate = useSubmit(act("deprecate"));
  const revoke = useSubmit(act("revoke"));
  if (v.state !== "published" && v.state !== "deprecated") return null;
  const error = deprecate.error || revoke.error;
  return (
    <Section title={`As an admin: ${v.version}`}>
      <form onSubmit={(e) => e.preventDefault()}>
        <Field label="Reason" value={reason} required maxLength={1000} error={fieldError(error, "reason")}
          hint="Shown to everyone who uses it: a run of a deprecated version warns with it, a revoked version's refusal names it."
          onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
        <Failure error={fieldError(error, "reason") ? null : error} />
        <p class="actions">
          {v.state === "published" && <button type="button" class="secondary" disabled={deprecate.busy} onClick={deprecate.submit}>Deprecate {v.version}</button>}{" "}
          <button type="button" class="danger" disabled={revoke.busy} onClick={revoke.submit}>Revoke {v.version}</button>
        </p>
      </form>
    </Section>
  );
}

/** VersionDetails is what one version is made of and how to use it. */
export function VersionDetails(props: { v: PluginVersion }) {
  const v = props.v;
  const usable = v.state === "published" || v.state === "deprecated";
  return (
    <Section title={`Version ${v.version}`}>
      {v.state === "deprecated" && <p class="warning" role="note">Deprecated: {v.state_reason}. Runs may still use it, with a warning.</p>}
      {v.state === "revoked" && <p class="failure" role="note">Revoked: {v.state_reason}. No new run may use it.</p>}
      {v.state === "pending" && <p class="warning" role="note">Waiting for an admin's review: only its namespace's owners and admins see it.</p>}
      {v.state === "rejected" && <p class="failure" role="note">Rejected: {v.state_reason}.</p>}
      <dl class="facts">
        <div><dt>Signed by the key</dt><dd><code>{v.signer}</code></dd></div>
        <div><dt>Plugin protocols</dt><dd>{v.protocols.join(", ")}</dd></div>
        <div><dt>Network it asks for</dt><dd>{v.network.length ? v.network.map((n) => <code key={n}>{n} </code>) : "None"}</dd></div>
      </dl>
      <Artifacts v={v} caption={`Platforms of ${v.version}`} />
      <ConfigPreview schema={v.config_schema} />
      {usable && (
        <>
          <h3>Use it</h3>
          <p>In a test's script, this version or any later one of the same major version:</p>
          <pre class="snippet"><code>{snippet(v, true)}</code></pre>
          <p>On your machine, for <code>barrage run</code>:</p>
          <pre class="snippet"><code>barrage plugin install {v.namespace}/{v.name}@{v.version}</code></pre>
        </>
      )}
    </Section>
  );
}

/** Artifacts lists version v's artifacts: platform, file, format, size and SHA-256. */
export function Artifacts(props: { v: PluginVersion; caption: string }) {
  return (
    <Table caption={props.caption} cols={["Platform", "File", "Format", numeric("Size"), "SHA-256"]}>
      {props.v.artifacts.map((a) => (
        <tr key={a.os + a.arch}>
          <td>{a.os}/{a.arch}</td>
          <td><code>{a.file}</code></td>
          <td>{a.format === "elf" ? "ELF executable" : "Python zipapp"}</td>
          <td class="n">{size(a.size)}</td>
          <td><code class="digest">{a.sha256}</code></td>
        </tr>
      ))}
    </Table>
  );
}

interface SchemaProp {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
}

/** ConfigPreview shows a version's config schema as the form it describes: each property a
 * field, disabled, with its type, description and default; and the schema itself, to read. */
export function ConfigPreview(props: { schema: string }) {
  if (!props.schema) return <p class="hint">Its config may be any object.</p>;
  let s: { description?: string; properties?: Record<string, SchemaProp>; required?: string[]; additionalProperties?: SchemaProp | boolean };
  try {
    s = JSON.parse(props.schema);
  } catch {
    return <p class="hint">Its config schema is not JSON: <code>{props.schema.slice(0, 200)}</code></p>;
  }
  const entries = Object.entries(s.properties ?? {});
  const more = s.additionalProperties;
  return (
    <>
      <fieldset class="preview" disabled>
        <legend>Its config, as a form</legend>
        {s.description && <p class="hint">{s.description}</p>}
        {entries.map(([name, prop]) => {
          const type = Array.isArray(prop.type) ? prop.type.join(" or ") : prop.type ?? "any";
          const hint = [type, prop.enum ? "one of " + prop.enum.map((e) => JSON.stringify(e)).join(", ") : "", prop.description ?? ""].filter(Boolean).join(" · ");
          return <Field key={name} label={name + (s.required?.includes(name) ? " (required)" : "")} hint={hint}
            placeholder={prop.default !== undefined ? JSON.stringify(prop.default) : ""} />;
        })}
        {more !== undefined && more !== false && <p class="hint">{entries.length ? "Other keys too, of names you choose." : "Keys of names you choose."}</p>}
        {entries.length === 0 && more === undefined && <p class="hint">No properties.</p>}
      </fieldset>
      <details>
        <summary>Its config schema</summary>
        <pre class="source">{JSON.stringify(s, null, 2)}</pre>
      </details>
    </>
  );
}
