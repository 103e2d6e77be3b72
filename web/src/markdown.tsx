// A plugin's README, written by its author, shown as Markdown that can do nothing: it is parsed
// into a syntax tree (CommonMark and tables) and each node the portal knows becomes an element
// built here, never HTML handed to the browser. Raw HTML in it shows as the text it is; a link
// goes only to http(s), mail or a place in the portal, with rel="noopener nofollow"; an image
// comes only from the server itself (the page's policy would refuse any other).
import type { ComponentChildren, VNode } from "preact";
import { useMemo } from "preact/hooks";
import type { Definition, Nodes, Root } from "mdast";
import { fromMarkdown } from "mdast-util-from-markdown";
import { gfmTableFromMarkdown } from "mdast-util-gfm-table";
import { gfmTable } from "micromark-extension-gfm-table";

/** parse reads Markdown into its syntax tree. */
export function parse(source: string): Root {
  return fromMarkdown(source, { extensions: [gfmTable()], mdastExtensions: [gfmTableFromMarkdown()] });
}

/** safeHref is where a link of the README may go: an http(s) or mailto URL, or a path of this
 * server; undefined for anything else (javascript:, data:, another scheme). */
export function safeHref(url: string, base = location.origin): string | undefined {
  let u: URL;
  try {
    u = new URL(url, base);
  } catch {
    return undefined;
  }
  return ["http:", "https:", "mailto:"].includes(u.protocol) ? u.href : undefined;
}

/** safeSrc is an image's address when it is one of the portal's own files (under /assets/),
 * else undefined: an image elsewhere on this server would be a request the reader's browser
 * sends with the reader's session (a download counted, an artifact streamed). */
export function safeSrc(url: string, base = location.origin): string | undefined {
  try {
    const u = new URL(url, base);
    const own = u.origin === new URL(base).origin && (u.protocol === "http:" || u.protocol === "https:");
    return own && u.pathname.startsWith("/assets/") && !u.search ? u.href : undefined;
  } catch {
    return undefined;
  }
}

/** maxDepth is how deep a README's blocks and spans may nest before the rest of them is shown
 * as text: a README of 10,000 nested quotes would otherwise exhaust the stack. */
const maxDepth = 32;

/** tooDeep says whether a line of source opens more nested containers (quotes, list items) than
 * the portal renders: the parser's own work grows past bounds on such input, so it is not
 * parsed at all. */
export function tooDeep(source: string): boolean {
  for (const line of source.split("\n")) {
    const m = /^(?:[ \t]*(?:>|[-*+]|\d{1,9}[.)])(?=[ \t]|$))+/.exec(line);
    if (m && (m[0].match(/>|[-*+]|\d{1,9}[.)]/g)?.length ?? 0) > maxDepth) return true;
  }
  return false;
}

/** Markdown shows source; its headings start at level `top` (the page has its own h1). */
export function Markdown(props: { source: string; top?: number }) {
  const tree = useMemo(() => (tooDeep(props.source) ? null : parse(props.source)), [props.source]);
  if (!tree) {
    return (
      <div class="markdown">
        <p class="warning" role="note">This README nests deeper than the portal shows; here is its text.</p>
        <pre>{props.source}</pre>
      </div>
    );
  }
  const defs = new Map<string, Definition>();
  collect(tree, defs, 0);
  const r = new Renderer(defs, props.top ?? 2);
  return <div class="markdown">{r.all(tree.children, 0)}</div>;
}

function collect(n: Nodes, defs: Map<string, Definition>, depth: number) {
  if (n.type === "definition") defs.set(n.identifier, n);
  if ("children" in n && depth < maxDepth) for (const c of n.children) collect(c, defs, depth + 1);
}

/** text is what node n says, without its form. */
function text(n: Nodes): string {
  if ("value" in n && typeof n.value === "string") return n.value;
  if (!("children" in n)) return "";
  let out = "";
  const stack: Nodes[] = [...(n.children as Nodes[])].reverse();
  while (stack.length) {
    const c = stack.pop()!;
    if ("value" in c && typeof c.value === "string") out += c.value + " ";
    else if ("children" in c) stack.push(...[...(c.children as Nodes[])].reverse());
  }
  return out;
}

class Renderer {
  constructor(
    readonly defs: Map<string, Definition>,
    readonly top: number,
  ) {}

  all(nodes: Nodes[], depth: number): ComponentChildren {
    return nodes.map((n, i) => this.one(n, i, depth + 1));
  }

  one(n: Nodes, key: number, depth: number): VNode | string | null {
    if (depth > maxDepth) return <span key={key}>{text(n)}</span>;
    switch (n.type) {
      case "text":
        return n.value;
      case "paragraph":
        return <p key={key}>{this.all(n.children, depth)}</p>;
      case "heading": {
        const H = `h${Math.min(6, n.depth + this.top - 1)}` as "h2";
        return <H key={key}>{this.all(n.children, depth)}</H>;
      }
      case "thematicBreak":
        return <hr key={key} />;
      case "blockquote":
        return <blockquote key={key}>{this.all(n.children, depth)}</blockquote>;
      case "list": {
        const items = n.children.map((c, i) => this.one(c, i, depth + 1));
        return n.ordered ? <ol key={key} start={n.start ?? undefined}>{items}</ol> : <ul key={key}>{items}</ul>;
      }
      case "listItem":
        return (
          <li key={key}>
            {n.checked !== null && n.checked !== undefined && <input type="checkbox" checked={n.checked} disabled aria-label={n.checked ? "done" : "to do"} />}
            {this.all(n.spread ? n.children : n.children.flatMap((c): Nodes[] => (c.type === "paragraph" ? c.children : [c])), depth)}
          </li>
        );
      case "code":
        return <pre key={key}><code>{n.value}</code></pre>;
      case "inlineCode":
        return <code key={key}>{n.value}</code>;
      case "html":
        return <code key={key} class="raw">{n.value}</code>; // shown, not made
      case "emphasis":
        return <em key={key}>{this.all(n.children, depth)}</em>;
      case "strong":
        return <strong key={key}>{this.all(n.children, depth)}</strong>;
      case "break":
        return <br key={key} />;
      case "link":
        return this.link(key, n.url, this.all(n.children, depth));
      case "linkReference": {
        const d = this.defs.get(n.identifier);
        return d ? this.link(key, d.url, this.all(n.children, depth)) : <span key={key}>{this.all(n.children, depth)}</span>;
      }
      case "image":
        return this.image(key, n.url, n.alt ?? "");
      case "imageReference": {
        const d = this.defs.get(n.identifier);
        return d ? this.image(key, d.url, n.alt ?? "") : <span key={key}>{n.alt}</span>;
      }
      case "table":
        return (
          <div key={key} class="scroll" tabIndex={0} role="region" aria-label="A table of the README">
            <table>
              <thead>{n.children.slice(0, 1).map((row, i) => this.row(row.children, i, "th", n.align ?? [], depth))}</thead>
              <tbody>{n.children.slice(1).map((row, i) => this.row(row.children, i, "td", n.align ?? [], depth))}</tbody>
            </table>
          </div>
        );
      case "definition":
        return null;
      default:
        // Anything else (footnotes and the like, which the parser is not asked for) as its text.
        return "children" in n ? <span key={key}>{this.all(n.children as Nodes[], depth)}</span> : null;
    }
  }

  row(cells: Nodes[], key: number, Cell: "th" | "td", align: (string | null)[], depth: number) {
    return (
      <tr key={key}>
        {cells.map((c, i) => (
          <Cell key={i} style={align[i] ? { textAlign: align[i] } : undefined}>
            {"children" in c ? this.all(c.children as Nodes[], depth) : null}
          </Cell>
        ))}
      </tr>
    );
  }

  link(key: number, url: string, children: ComponentChildren) {
    const href = safeHref(url);
    if (!href) return <span key={key}>{children}</span>;
    return <a key={key} href={href} rel="noopener nofollow">{children}</a>;
  }

  image(key: number, url: string, alt: string) {
    const src = safeSrc(url);
    if (!src) return <span key={key} class="hint">[image: {alt || "no description"}]</span>;
    return <img key={key} src={src} alt={alt} />;
  }
}
