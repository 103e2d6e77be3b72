// An author's pages: the namespaces they own, claiming one, and a namespace's owners, signing
// keys and plugins with each version's review. Publishing stays a command (`barrage plugin
// publish`): it signs with the author's private key, which never comes near a browser.
import { useState } from "preact/hooks";
import { call, query, type Namespace, type Page, type Plugin, type PluginSummary, type User } from "../api";
import { Link, navigate, useTitle } from "../nav";
import { Failure, Field, Section, Table, TextArea, Badge, date, fieldError, useAction, useLoad, useSubmit } from "../ui";
import { VersionState } from "./market";

/** NamespacesPage lists the user's namespaces and claims new ones. */
export function NamespacesPage() {
  useTitle("Your namespaces");
  const mine = useLoad(() => call<{ items: Namespace[] }>("GET", "/v1/namespaces"), []);
  const [name, setName] = useState("");
  const claim = useSubmit(async () => {
    const ns = await call<Namespace>("POST", "/v1/namespaces", { name: name.trim() });
    navigate(`/namespaces/${ns.name}`);
  });
  return (
    <main>
      <h1>Your namespaces</h1>
      <p class="hint">
        A namespace holds your plugins: <code>namespace/plugin</code>. Claim one, register the public key you sign
        with, then publish from your machine with <code>barrage plugin publish</code>. An admin reviews each version
        before others may run it.
      </p>
      <Failure error={mine.error} />
      {mine.data && (mine.data.items.length === 0 ? <p>You own no namespace yet.</p> : (
        <ul class="plain">
          {mine.data.items.map((n) => (
            <li key={n.name}>
              <Link href={`/namespaces/${n.name}`}>{n.name}</Link>
              {n.reserved && <> <Badge tone="bad">reserved</Badge> {n.reserved_reason}</>}
            </li>
          ))}
        </ul>
      ))}
      <Section title="Claim a namespace">
        <form onSubmit={claim.submit}>
          <Field label="Name" value={name} required maxLength={64} error={fieldError(claim.error, "name")}
            hint="Lower-case letters, digits and single hyphens, starting with a letter. First come, first served."
            onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          <Failure error={fieldError(claim.error, "name") ? null : claim.error} />
          <button type="submit" disabled={claim.busy}>Claim it</button>
        </form>
      </Section>
    </main>
  );
}

/** NamespacePage is a namespace its owner manages: owners, keys, and its plugins' versions. */
export function NamespacePage(props: { name: string; user: User }) {
  useTitle(`Namespace ${props.name}`);
  const ns = useLoad(() => call<Namespace>("GET", `/v1/namespaces/${props.name}`), [props.name]);
  const plugins = useLoad(async () => {
    const page = await call<Page<PluginSummary>>("GET", "/v1/plugins" + query({ namespace: props.name, limit: 100 }));
    return Promise.all(page.items.map((p) => call<Plugin>("GET", `/v1/plugins/${p.namespace}/${p.name}`)));
  }, [props.name]);
  const n = ns.data;
  const owner = n?.owners !== undefined;
  return (
    <main class="wide">
      <h1>Namespace {props.name}</h1>
      <Failure error={ns.error} />
      {n?.reserved && <p class="failure" role="note">Reserved by an admin: {n.reserved_reason}. Nothing new may be published in it.</p>}
      {n && owner && <Owners ns={n} user={props.user} onChange={ns.set} />}
      {n && <Keys ns={n} owner={owner} onChange={ns.reload} />}
      <Section title="Plugins">
        <Failure error={plugins.error} />
        {plugins.data && (plugins.data.length === 0
          ? <p>No plugin yet. Publish one from your machine: <code>barrage plugin publish</code> (see <code>barrage plugin publish -h</code>).</p>
          : plugins.data.map((p) => <PluginVersions key={p.name} p={p} />))}
      </Section>
    </main>
  );
}

/** nextStep says what an author does about a version in its state. */
function nextStep(state: string): string {
  switch (state) {
    case "pending":
      return "An admin reviews it; nobody else sees it until then.";
    case "rejected":
      return "Fix what the reviewer says and publish a new version.";
    case "published":
      return "Everyone signed in finds it and may run it.";
    case "deprecated":
      return "Still found and run, with a warning: publish what replaces it.";
    default:
      return "No new run may use it; the runs before keep it.";
  }
}

function PluginVersions(props: { p: Plugin }) {
  const p = props.p;
  return (
    <>
      <h3><Link href={`/plugins/${p.namespace}/${p.name}`}>{p.namespace}/{p.name}</Link></h3>
      <Table caption={`The versions of ${p.namespace}/${p.name}`} cols={["Version", "Review", "Published", "What next"]}>
        {p.versions.map((v) => (
          <tr key={v.version}>
            <td>{v.version}</td>
            <td><VersionState v={v} /></td>
            <td>{date(v.created_at)}</td>
            <td>{nextStep(v.state)}</td>
          </tr>
        ))}
      </Table>
    </>
  );
}

function Owners(props: { ns: Namespace; user: User; onChange: (n: Namespace) => void }) {
  const n = props.ns;
  const [id, setId] = useState("");
  const add = useSubmit(async () => {
    props.onChange(await call<Namespace>("PUT", `/v1/namespaces/${n.name}/owners/${encodeURIComponent(id.trim())}`));
    setId("");
  });
  const removing = useAction();
  const remove = removing.act(async (owner: string) => {
    const left = await call<Namespace>("DELETE", `/v1/namespaces/${n.name}/owners/${owner}`);
    if (owner === props.user.id) navigate("/namespaces");
    else props.onChange(left);
  });
  const owners = n.owners ?? [];
  return (
    <Section title="Owners">
      <p class="hint">Every owner may publish, register and retire keys, deprecate versions, and add or remove owners. The last owner stays.</p>
      <Failure error={removing.error} />
      <Table caption="Owners" cols={["User id", ""]}>
        {owners.map((o) => (
          <tr key={o}>
            <td><code>{o}</code>{o === props.user.id && " (you)"}</td>
            <td>
              {owners.length > 1 && (
                <button type="button" class="secondary small" aria-label={`Remove owner ${o}`} onClick={() => remove(o)}>Remove</button>
              )}
            </td>
          </tr>
        ))}
      </Table>
      <form onSubmit={add.submit} class="inline">
        <Field label="User id of a new owner" value={id} required hint="They find it on their license page, or with barrage me."
          onInput={(e) => setId((e.target as HTMLInputElement).value)} />
        <button type="submit" disabled={add.busy}>Add owner</button>
      </form>
      <Failure error={add.error} />
    </Section>
  );
}

function Keys(props: { ns: Namespace; owner: boolean; onChange: () => void }) {
  const n = props.ns;
  const [key, setKey] = useState("");
  const [proof, setProof] = useState("");
  const add = useSubmit(async () => {
    // Pasted as add-key --print prints them, with their labels, or without.
    const publicKey = key.trim().replace(/^public key:\s*/i, "");
    await call("POST", `/v1/namespaces/${n.name}/keys`, { public_key: publicKey, proof: proof.trim().replace(/^proof:\s*/i, "") });
    setKey("");
    setProof("");
    props.onChange();
  });
  const retiring = useAction();
  const retire = retiring.act(async (id: string) => {
    await call("POST", `/v1/namespaces/${n.name}/keys/${id}/retire`);
    props.onChange();
  });
  return (
    <Section title="Signing keys">
      <p class="hint">Versions are signed with one of these keys; a retired key signs nothing new and still verifies what it signed.</p>
      <Failure error={retiring.error} />
      {n.keys.length === 0 ? <p>No key yet: versions cannot be published until one is registered.</p> : (
        <Table caption="Signing keys" cols={["Key id", "Public key", "Added", "State", ""]}>
          {n.keys.map((k) => (
            <tr key={k.id}>
              <td><code>{k.id}</code></td>
              <td><code class="digest">{k.public_key}</code></td>
              <td>{date(k.created_at)}</td>
              <td>{k.retired_at ? <Badge tone="neutral">retired {date(k.retired_at)}</Badge> : <Badge tone="good">active</Badge>}</td>
              <td>
                {props.owner && !k.retired_at && (
                  <button type="button" class="secondary small" aria-label={`Retire key ${k.id}`} onClick={() => retire(k.id)}>Retire</button>
                )}
              </td>
            </tr>
          ))}
        </Table>
      )}
      {props.owner && (
        <form onSubmit={add.submit}>
          <h3>Register a key</h3>
          <p class="hint">
            Make a key pair on your machine with <code>barrage plugin keygen</code> (the private half stays there), then
            print the proof that you hold it: <code>barrage namespaces add-key {n.name} --print</code>.
          </p>
          <Field label="Public key" value={key} required placeholder="ed25519:…" error={fieldError(add.error, "public_key")}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)} />
          <TextArea label="Proof" value={proof} required rows={2} error={fieldError(add.error, "proof")}
            onInput={(e) => setProof((e.target as HTMLTextAreaElement).value)} />
          <Failure error={fieldError(add.error, "public_key") || fieldError(add.error, "proof") ? null : add.error} />
          <button type="submit" disabled={add.busy}>Register the key</button>
        </form>
      )}
    </Section>
  );
}
