// A script's source read as an object, and the object written as YAML: apart from the model,
// so that the YAML library is loaded with the wizard's page and not with every page (the debug
// page uses the model's JSON paths).
import { isNode, parseDocument, stringify, visit } from "yaml";
import type { Obj } from "./model";

/** Parsed is a script's source read: its object, whether it had comments, or why not. */
export interface Parsed {
  script?: unknown;
  comments: boolean;
  error?: string;
}

/** parse reads a script's source, YAML or JSON. */
export function parse(source: string): Parsed {
  const doc = parseDocument(source);
  if (doc.errors.length) return { comments: false, error: doc.errors[0].message };
  let comments = Boolean(doc.commentBefore || doc.comment);
  visit(doc, (_, node) => {
    if (isNode(node) && (node.commentBefore || node.comment)) {
      comments = true;
      return visit.BREAK;
    }
  });
  return { script: doc.toJS(), comments };
}

/** yamlOf writes a script as the wizard saves it. */
export function yamlOf(script: Obj): string {
  return stringify(script, { lineWidth: 0 });
}
