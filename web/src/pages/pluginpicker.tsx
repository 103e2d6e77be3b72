// Adding a marketplace plugin to a test, from its editor or its wizard: find it, pick a version
// or a range, name it, and the script gains its line under `plugins:`.
import { useState } from "preact/hooks";
import { call, query, type Page, type Plugin, type PluginKind, type PluginSummary } from "../api";
import { Failure, Field, Select, TextArea, useAction, useSubmit } from "../ui";
import { alias } from "./market";

/** PluginUse is a script's entry for a marketplace plugin. */
export interface PluginUse {
  use: string; // namespace/name@version or @range
  as: string;
  kind: PluginKind;
  network?: string[];
  config?: unknown;
}

/** useLine is u as a line of a script's plugins list (YAML flow style). */
export function useLine(u: PluginUse): string {
  const network = u.network?.length ? `, network: [${u.network.map((n) => JSON.stringify(n)).join(", ")}]` : "";
  const config = u.config !== undefined ? `, config: ${JSON.stringify(u.config)}` : ""; // JSON is YAML's flow style
  return `  - { use: ${u.use}, as: ${u.as}, kind: ${u.kind}${network}${config} }`;
}

/** withPlugin is source (YAML or JSON) with u added to its plugins: under a `plugins:` block
 * that is there, else in a new one at its end. */
export function withPlugin(source: string, u: PluginUse): string {
  if (/^\s*\{/.test(source)) {
    try {
      const doc = JSON.parse(source);
      const entry: Record<string, unknown> = { use: u.use, as: u.as, kind: u.kind };
      if (u.network?.length) entry.network = u.network;
      if (u.config !== undefined) entry.config = u.config;
      doc.plugins = [...(Array.isArray(doc.plugins) ? doc.plugins : []), entry];
      return JSON.stringify(doc, null, 2) + "\n";
    } catch {
      // Not JSON after all: the server says what is wrong with it.
    }
  }
  const line = useLine(u);
  const empty = /^plugins:[ \t]*\[\][ \t]*$/m;
  if (empty.test(source)) return source.replace(empty, "plugins:\n" + line);
  const block = /^plugins:[ \t]*(#.*)?$/m.exec(source);
  if (block) {
    const at = block.index + block[0].length;
    return source.slice(0, at) + "\n" + line + source.slice(at);
  }
  const sep = source === "" || source.endsWith("\n") ? "" : "\n";
  return `${source}${sep}plugins:\n${line}\n`;
}

/** rangeOf is the range a script names to take version v or a later one of its major version
 * (of its minor one, before 1.0.0), as the marketplace resolves ^. */
export function rangeOf(v: string): string {
  const [major, minor] = v.replace(/[-+].*$/, "").split(".");
  return `^${major}.${minor}`;
}

/** upper is the first version range r (^major.minor) does not take. */
function upper(r: string): string {
  const [major, minor] = r.slice(1).split(".").map(Number);
  return major === 0 ? `0.${minor + 1}.0` : `${major + 1}.0.0`;
}

/** PluginPicker finds a marketplace plugin and adds it (onAdd) as the user names it; taken are
 * the local names the script has already. */
export function PluginPicker(props: { onAdd: (u: PluginUse) => void; taken: string[] }) {
  const [words, setWords] = useState("");
  const [found, setFound] = useState<PluginSummary[] | null>(null);
  const [plugin, setPlugin] = useState<Plugin | null>(null);
  const [version, setVersion] = useState("");
  const [name, setName] = useState("");
  const [kind, setKind] = useState("");
  const [config, setConfig] = useState("");
  const [configError, setConfigError] = useState("");
  const [added, setAdded] = useState("");
  const find = useSubmit(async () => {
    setPlugin(null);
    setAdded("");
    setFound((await call<Page<PluginSummary>>("GET", "/v1/plugins" + query({ q: words.trim(), limit: 20 }))).items);
  });
  const picking = useAction();
  const pick = picking.act(async (p: PluginSummary) => {
    const full = await call<Plugin>("GET", `/v1/plugins/${p.namespace}/${p.name}`);
    const usable = full.versions.filter((v) => v.state === "published" || v.state === "deprecated");
    setPlugin(full);
    setVersion(usable.length ? rangeOf(usable[0].version) : "");
    let n = alias(p.name);
    for (let i = 2; props.taken.includes(n); i++) n = `${alias(p.name)}${i}`;
    setName(n);
    setKind(full.kinds[0]);
  });
  const usable = plugin?.versions.filter((v) => v.state === "published" || v.state === "deprecated") ?? [];
  const ranges = [...new Set(usable.map((v) => rangeOf(v.version)))];
  function add(e: Event) {
    e.preventDefault();
    if (!plugin) return;
    let cfg: unknown;
    if (config.trim()) {
      try {
        cfg = JSON.parse(config);
      } catch (err) {
        setConfigError(`not JSON: ${(err as Error).message}`);
        return;
      }
    }
    setConfigError("");
    const exact = usable.find((v) => v.version === version);
    const newest = exact ?? usable.find((v) => rangeOf(v.version) === version);
    const use = `${plugin.namespace}/${plugin.name}@${version}`;
    props.onAdd({ use, as: name.trim(), kind: kind as PluginKind, network: newest?.network, config: cfg });
    setConfig("");
    setAdded(`${use} is in the script as ${name.trim()}.`);
    setPlugin(null);
  }
  return (
    <details class="picker">
      <summary>Add a marketplace plugin</summary>
      <div role="search" aria-label="Find a plugin to add" class="inline">
        <Field label="Find a plugin" type="search" value={words} onInput={(e) => setWords((e.target as HTMLInputElement).value)}
          onKeyDown={(e) => { if (e.key === "Enter") find.submit(e); }} />
        <button type="button" class="secondary" disabled={find.busy} onClick={find.submit}>Find</button>
      </div>
      <Failure error={find.error || picking.error} />
      {found && !plugin && (found.length === 0 ? <p>No plugin matches.</p> : (
        <ul class="plain">
          {found.map((p) => (
            <li key={p.namespace + "/" + p.name}>
              <button type="button" class="link" onClick={() => pick(p)}>{p.namespace}/{p.name}</button> {p.latest}: {p.description}
            </li>
          ))}
        </ul>
      ))}
      {plugin && (
        <div class="inline" role="group" aria-label={`Add ${plugin.namespace}/${plugin.name}`}>
          {usable.length === 0 ? <p>No version of it may be run.</p> : (
            <>
              <Select label="Version" value={version} onChange={setVersion}
                options={[...ranges.map((r): [string, string] => [r, `${r}: the newest from ${r.slice(1)}.0, before ${upper(r)}`]),
                  ...usable.map((v): [string, string] => [v.version, `${v.version} exactly${v.state === "deprecated" ? " (deprecated)" : ""}`])]} />
              {plugin.kinds.length > 1 && <Select label="Kind" value={kind} onChange={setKind} options={plugin.kinds.map((k): [string, string] => [k, k])} />}
              <Field label="Local name" value={name} hint="How the script calls it: ${name.variable} for a session element."
                onInput={(e) => setName((e.target as HTMLInputElement).value)} />
              <TextArea label="Config (JSON)" value={config} rows={2} error={configError}
                hint={`What the plugin is to do, as its page describes: /plugins/${plugin.namespace}/${plugin.name}. Empty: none.`}
                onInput={(e) => setConfig((e.target as HTMLTextAreaElement).value)} />
              <button type="button" onClick={add}>Add it to the script</button>
            </>
          )}
        </div>
      )}
      {added && <p role="status" class="hint ok">{added}</p>}
    </details>
  );
}
