import { queryOptions } from '@tanstack/react-query';
import { telemetryCurrent, telemetryHistory, telemetryListEvents } from '../../client/sdk.gen';

export type StatsRange = '5m' | '1h' | '24h';

export const telemetryKeys = {
  current: ['stats', 'current'] as const,
  history: (service: string, backend: string | null, range: StatsRange) => ['stats', 'history', service, backend, range] as const,
  events: (filters: EventFilters) => ['events', filters] as const,
  eventsAll: ['events'] as const,
};

/** Seeded once, then kept current by the SSE stream (see api/stream.tsx). */
export const currentStatsQuery = () =>
  queryOptions({
    queryKey: telemetryKeys.current,
    queryFn: async ({ signal }) => (await telemetryCurrent({ signal })).data,
    staleTime: Infinity,
  });

export const historyQuery = (service: string, backend: string | null, range: StatsRange) =>
  queryOptions({
    queryKey: telemetryKeys.history(service, backend, range),
    queryFn: async ({ signal }) =>
      (await telemetryHistory({ query: { service, backend: backend ?? undefined, range }, signal })).data,
    // The live buffer takes over after the first load; refetching would only reset it.
    staleTime: Infinity,
    gcTime: 0,
  });

export type EventFilters = { kind?: string; service?: string; since?: string; limit?: number };

export const eventsQuery = (filters: EventFilters) =>
  queryOptions({
    queryKey: telemetryKeys.events(filters),
    queryFn: async ({ signal }) =>
      (await telemetryListEvents({ query: { ...filters, limit: filters.limit ?? 200 }, signal })).data,
  });
