// A line diff of two texts, for a test's revisions: the longest common subsequence of their
// lines, read back as the lines kept, removed and added.

export interface DiffLine {
  op: " " | "-" | "+";
  text: string;
  /** The line's number in the old text (kept, removed) or the new one (added). */
  line: number;
}

/** diffLines compares a with b, line by line. Texts of more than 4,000 lines each are compared
 * as a whole (every line removed, then added) rather than with a table of their product. */
export function diffLines(a: string, b: string): DiffLine[] {
  const x = a.split("\n");
  const y = b.split("\n");
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head && x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const xs = x.slice(head, x.length - tail);
  const ys = y.slice(head, y.length - tail);
  const out: DiffLine[] = x.slice(0, head).map((text, i) => ({ op: " ", text, line: i + 1 }));
  if (xs.length * ys.length > 16_000_000) {
    xs.forEach((text, i) => out.push({ op: "-", text, line: head + i + 1 }));
    ys.forEach((text, i) => out.push({ op: "+", text, line: head + i + 1 }));
  } else {
    const n = xs.length;
    const m = ys.length;
    const lcs = new Uint32Array((n + 1) * (m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * (m + 1) + j] = xs[i] === ys[j] ? lcs[(i + 1) * (m + 1) + j + 1] + 1 : Math.max(lcs[(i + 1) * (m + 1) + j], lcs[i * (m + 1) + j + 1]);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && xs[i] === ys[j]) {
        out.push({ op: " ", text: xs[i], line: head + i + 1 });
        i++;
        j++;
      } else if (j < m && (i === n || lcs[i * (m + 1) + j + 1] >= lcs[(i + 1) * (m + 1) + j])) {
        out.push({ op: "+", text: ys[j], line: head + j + 1 });
        j++;
      } else {
        out.push({ op: "-", text: xs[i], line: head + i + 1 });
        i++;
      }
    }
  }
  x.slice(x.length - tail).forEach((text, i) => out.push({ op: " ", text, line: x.length - tail + i + 1 }));
  return out;
}
