// An axis's ticks, placed as uPlot places them but bounded: uPlot's own loop adds the step to
// the last tick until it passes the scale's end, and never ends when adding the step leaves the
// value as it was (leeoniya/uPlot#827, #1084); the page then fills its memory with ticks and
// throws "Invalid array length" from inside a chart's redraw.

/** most is more ticks than any axis has room for. */
const most = 64;

/** ticks gives the multiples of incr from min to max, each rounded to the digits incr has, at
 * most 64 of them: uPlot's Axis.splits. */
export function ticks(min: number, max: number, incr: number): number[] {
  const out: number[] = [];
  if (!(incr > 0) || !Number.isFinite(min) || !Number.isFinite(max)) return out;
  const digits = Math.min(20, Math.max(0, Math.ceil(-Math.log10(incr)) + 1));
  // Each tick is its index times the step, not the last one plus the step: no error adds up.
  for (let i = Math.ceil(min / incr - 1e-9); out.length < most; i++) {
    const v = Number((i * incr).toFixed(digits));
    if (v > max) break;
    out.push(Object.is(v, -0) ? 0 : v);
  }
  return out;
}
