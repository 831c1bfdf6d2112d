import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import type { Rates, StatsSnapshot } from '../client/types.gen';
import { TimeSeriesBuffer } from '../lib/timeSeries';
import { historyQuery, type StatsRange } from './queries/telemetry';
import { useStream } from './stream';

export const RANGE_SECONDS: Record<StatsRange, number> = { '5m': 300, '1h': 3600, '24h': 86400 };

/** The counters of one service, or of one of its backends ("address:port"), in a snapshot. */
function countersIn(snapshot: StatsSnapshot, service: string, backend: string | null): Rates | null {
  const entry = snapshot.services.find((s) => s.name === service);
  if (!entry) return null;
  if (backend === null) return entry.counters ?? null;
  return entry.backends.find((b) => b.endpoint === backend)?.counters ?? null;
}

/**
 * A live series: the stored history for the range, then one sample per stream message, in a
 * bounded gap-aware buffer. `version` changes on every update so charts redraw.
 */
export function useLiveSeries(service: string, backend: string | null, range: StatsRange) {
  const history = useQuery(historyQuery(service, backend, range));
  const { subscribe } = useStream();
  const [live, setLive] = useState<{ buffer: TimeSeriesBuffer; version: number } | null>(null);

  useEffect(() => {
    if (!history.data) return;
    const buffer = new TimeSeriesBuffer(history.data.resolution_seconds, RANGE_SECONDS[range]);
    buffer.pushAll(history.data.points.map((point) => ({ ...point, t: Date.parse(point.t) / 1000 })));
    setLive({ buffer, version: 0 });
    return subscribe((snapshot) => {
      const counters = countersIn(snapshot, service, backend);
      if (!counters) return;
      buffer.push({ ...counters, t: Date.parse(snapshot.at) / 1000 });
      setLive({ buffer, version: buffer.length + (buffer.last ?? 0) });
    });
  }, [history.data, service, backend, range, subscribe]);

  return { buffer: live?.buffer ?? null, version: live?.version ?? -1, error: history.error, isLoading: history.isLoading };
}
