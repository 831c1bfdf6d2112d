import type { Columns, Metric } from '../lib/timeSeries';
import { METRICS } from '../lib/timeSeries';

type Props = { columns: Columns | null; metric: Metric; width?: number; height?: number; color?: string; label: string };

/** A tiny SVG line; a null (gap) lifts the pen, so missing data shows as a break. */
export function Sparkline({ columns, metric, width = 120, height = 28, color = 'var(--mantine-primary-color-filled)', label }: Props) {
  const xs = columns?.[0] ?? [];
  const ys = columns?.[1 + METRICS.indexOf(metric)] ?? [];
  if (xs.length < 2) {
    return <svg width={width} height={height} role="img" aria-label={`${label}: no data`} />;
  }
  const x0 = xs[0];
  const spanX = xs[xs.length - 1] - x0 || 1;
  const maxY = Math.max(1, ...ys.map((y) => y ?? 0));
  let path = '';
  let penDown = false;
  ys.forEach((y, i) => {
    if (y === null) {
      penDown = false;
      return;
    }
    const px = ((xs[i] - x0) / spanX) * (width - 2) + 1;
    const py = height - 1 - (y / maxY) * (height - 2);
    path += `${penDown ? 'L' : 'M'}${px.toFixed(1)},${py.toFixed(1)}`;
    penDown = true;
  });
  return (
    <svg width={width} height={height} role="img" aria-label={label}>
      <path d={path} fill="none" stroke={color} strokeWidth={1.5} />
    </svg>
  );
}
