// Line charts, drawn by uPlot (the reports draw theirs with it too): time on x, one or more
// series on y, redrawn in place when their data grows, as it does each second of a live run.
import uPlot from "uplot";
import { useEffect, useLayoutEffect, useRef } from "preact/hooks";
import { ticks } from "./ticks";

export interface Line {
  label: string;
  color: string;
  values: (number | null)[];
  dash?: boolean;
  /** right puts the line on a scale of its own, read on the right (VUs beside requests/s). */
  right?: { unit: string };
  /** points marks each value, and joins values across the gaps (nulls) between them: a few
   * measured levels beside a curve. */
  points?: boolean;
}

const palette = ["#0b57d0", "#b3261e", "#1e8e3e", "#a142f4", "#e37400", "#12b5cb", "#5f6368"];

/** color is the i-th of the charts' colours. */
export function color(i: number): string {
  return palette[i % palette.length];
}

/** Chart draws lines over x (seconds into the run), titled and described for those who cannot
 * see it: its figure's caption says what it shows and its table alternative is the page's. */
export function Chart(props: { title: string; unit: string; xUnit?: string; xWhole?: boolean; x: number[]; lines: Line[]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const height = props.height ?? 220;
  const shape = props.lines.map((l) => l.label).join("\u0000");
  const right = props.lines.find((l) => l.right)?.right;
  useEffect(() => {
    const el = box.current!;
    const width = () => Math.max(280, el.clientWidth);
    const splits = (_: uPlot, _axis: number, min: number, max: number, incr: number) => ticks(min, max, incr);
    const u = new uPlot(
      {
        width: width(),
        height,
        legend: { live: false },
        cursor: { drag: { x: false, y: false } },
        scales: { x: { time: false }, ...(right ? { r: {} } : {}) },
        axes: [
          { stroke: "#888", grid: { stroke: "rgba(128,128,128,0.2)" }, splits, values: (_, ticks) => ticks.map((t) => (props.xWhole && !Number.isInteger(t) ? "" : `${t}${props.xUnit ?? "s"}`)) },
          { stroke: "#888", grid: { stroke: "rgba(128,128,128,0.2)" }, splits, size: 60, values: (_, ticks) => ticks.map((t) => `${t}${props.unit}`) },
          ...(right ? [{ scale: "r", side: 1, stroke: "#888", grid: { show: false }, splits, size: 50, values: (_: uPlot, ticks: number[]) => ticks.map((t) => `${t}${right.unit}`) }] : []),
        ],
        series: [{}, ...props.lines.map((l) => ({
          label: l.label, stroke: l.color, width: 1.5, dash: l.dash ? [6, 4] : undefined, points: { show: !!l.points, size: 7 }, spanGaps: !!l.points,
          scale: l.right ? "r" : "y",
        }))],
      },
      [props.x, ...props.lines.map((l) => l.values)] as uPlot.AlignedData,
      el,
    );
    plot.current = u;
    const resized = new ResizeObserver(() => u.setSize({ width: width(), height }));
    resized.observe(el);
    return () => {
      resized.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [shape, height, props.unit]);
  // New data is drawn before the page is painted, within the update that brought it.
  useLayoutEffect(() => {
    plot.current?.setData([props.x, ...props.lines.map((l) => l.values)] as uPlot.AlignedData);
  });
  return (
    <figure class="chart">
      <figcaption>{props.title}</figcaption>
      <div ref={box} role="img" aria-label={`${props.title}: ${props.lines.map((l) => l.label).join(", ")}`} />
    </figure>
  );
}
