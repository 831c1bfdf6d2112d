import { keepPreviousData, queryOptions } from '@tanstack/react-query';
import { logsReadLogs } from '../../client/sdk.gen';
import type { LogEntry, LogSource } from '../../client/types.gen';

/** System → Logs: this node's journal, newest first. */
export type LogFilters = { source: LogSource[]; priority: number; text: string; since: string | null; until: string | null };

const logKeys = { page: (filters: LogFilters, before: string | null) => ['logs', filters, before] as const };

function queryFor(filters: LogFilters) {
  return {
    source: filters.source.length ? filters.source : undefined,
    priority: filters.priority,
    text: filters.text || undefined,
    since: filters.since ?? undefined,
    until: filters.until ?? undefined,
  };
}

export const logsQuery = (filters: LogFilters, before: string | null) =>
  queryOptions({
    queryKey: logKeys.page(filters, before),
    queryFn: async ({ signal }) => (await logsReadLogs({ signal, query: { ...queryFor(filters), before: before ?? undefined, limit: 200 } })).data,
    placeholderData: keepPreviousData,
  });

function search(filters: LogFilters, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams();
  const query = queryFor(filters);
  for (const source of query.source ?? []) params.append('source', source);
  params.set('priority', String(query.priority));
  if (query.text) params.set('text', query.text);
  if (query.since) params.set('since', query.since);
  if (query.until) params.set('until', query.until);
  for (const [key, value] of Object.entries(extra)) params.set(key, value);
  return params.toString();
}

/** The same filters as text, oldest first: a plain link, the session cookie authenticates it. */
export const logsDownloadUrl = (filters: LogFilters) => `/api/v1/logs/download?${search(filters)}`;

/**
 * Live tail: each new entry as it reaches the journal (Server-Sent Events). `onOpen`: from now on
 * every new entry is sent (the API opens the stream once it knows where it starts). Returns the closer.
 */
export function tailLogs(
  filters: LogFilters,
  onEntry: (entry: LogEntry) => void,
  onUnavailable: (reason: string) => void,
  onOpen: () => void,
): () => void {
  const source = new EventSource(`/api/v1/logs/stream?${search(filters)}`, { withCredentials: true });
  source.addEventListener('open', onOpen);
  source.addEventListener('log', (message: MessageEvent<string>) => onEntry(JSON.parse(message.data) as LogEntry));
  source.addEventListener('unavailable', (message: MessageEvent<string>) => {
    onUnavailable(JSON.parse(message.data) as string);
    source.close();
  });
  return () => source.close();
}
