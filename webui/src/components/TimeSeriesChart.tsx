import { Box, Text, useComputedColorScheme } from '@mantine/core';
import { useElementSize } from '@mantine/hooks';
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import { METRICS, type Columns, type Metric } from '../lib/timeSeries';

export type ChartSeries = { metric: Metric; label: string; color: string; scale?: number };

type Props = {
  columns: Columns | null;
  version: number;
  series: ChartSeries[];
  format: (value: number) => string;
  height?: number;
  /** Shown instead of an empty chart, e.g. why there is no data. */
  emptyText: string;
  /** Seconds of time axis, ending at the newest point (uPlot would stretch one point over years). */
  window: number;
};

/** Pixels for the y axis: its longest tick label at ~7 px a character, plus the tick marks. */
function yAxisWidth(_u: uPlot, values: string[] | null): number {
  const longest = Math.max(0, ...(values ?? []).map((label) => label.length));
  return Math.max(40, longest * 7 + 18);
}

/**
 * The time axis: `window` seconds ending at the newest point. Set by the chart itself (the x scale
 * is not auto-ranged): uPlot stretched a single point over years, and before the first point
 * labelled the axis with a date in 2029.
 */
export function timeRange(columns: Columns | null, window: number): { min: number; max: number } {
  const newest = columns?.[0].at(-1) ?? Date.now() / 1000;
  return { min: newest - window, max: newest };
}

/** A live line chart. Null points (gaps) draw as breaks: spanGaps is off. */
export function TimeSeriesChart({ columns, version, series, format, height = 180, emptyText, window }: Props) {
  const { ref, width } = useElementSize();
  const target = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const dark = useComputedColorScheme('light') === 'dark';
  const hasData = !!columns && columns[0].length > 0;

  const data = (): uPlot.AlignedData => {
    if (!columns) return [[]];
    return [
      columns[0],
      ...series.map(({ metric, scale = 1 }) =>
        columns[1 + METRICS.indexOf(metric)].map((v) => (v === null ? null : v * scale)),
      ),
    ] as uPlot.AlignedData;
  };

  // (Re)create the plot when its shape changes; feed data on every update.
  useEffect(() => {
    if (!target.current || width === 0 || !hasData) return;
    const axisColor = dark ? '#c1c2c5' : '#495057';
    const gridColor = dark ? 'rgba(255,255,255,0.08)' : 'rgba(0,0,0,0.08)';
    const axis = { stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor } };
    plot.current = new uPlot(
      {
        width,
        height,
        cursor: { drag: { x: false, y: false } },
        legend: { live: true },
        scales: {
          x: { time: true, auto: false, ...timeRange(columns, window) },
          y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] },
        },
        // As wide as the longest tick label ("4.0kbit/s" overflowed a fixed 60 px).
        axes: [axis, { ...axis, size: yAxisWidth, values: (_u, ticks) => ticks.map(format) }],
        series: [
          {},
          ...series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: 1.5,
            spanGaps: false,
            value: (_u: uPlot, v: number | null) => (v === null ? '—' : format(v)),
          })),
        ],
      },
      data(),
      target.current,
    );
    plot.current.setScale('x', timeRange(columns, window));
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- data is fed by the effect below
  }, [width, height, dark, hasData, series, window]);

  useEffect(() => {
    plot.current?.setData(data());
    plot.current?.setScale('x', timeRange(columns, window));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [version]);

  return (
    <Box ref={ref} mih={height}>
      {hasData ? <div ref={target} /> : (
        <Text c="dimmed" size="sm" ta="center" pt={height / 3}>
          {emptyText}
        </Text>
      )}
    </Box>
  );
}
