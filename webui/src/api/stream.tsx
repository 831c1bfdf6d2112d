/**
 * One Server-Sent Events connection per browser tab (GET /api/v1/stream, cookie auth). It keeps
 * the current-stats query fresh, feeds live charts, and refetches what a revision or data-plane
 * event changes, so no page polls for live state.
 */
import { notifications } from '@mantine/notifications';
import { useQueryClient } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import type { EventRead, StatsSnapshot } from '../client/types.gen';
import { changesKey, statusKey } from './queries/candidate';
import { firewallKey } from './queries/firewall';
import { haKeys } from './queries/ha';
import { revisionKeys } from './queries/revisions';
import { serviceKeys } from './queries/services';
import { telemetryKeys } from './queries/telemetry';
import { userKeys } from './queries/users';

export type StreamState = 'connecting' | 'live' | 'lost';
type StatsListener = (snapshot: StatsSnapshot) => void;

type StreamApi = { state: StreamState; subscribe: (listener: StatsListener) => () => void };

const StreamContext = createContext<StreamApi>({ state: 'lost', subscribe: () => () => {} });

export const useStream = () => useContext(StreamContext);

const RECONNECT_MS = 5000;

export function StreamProvider({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient();
  const listeners = useRef(new Set<StatsListener>());
  const [state, setState] = useState<StreamState>('connecting');
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    if (typeof EventSource === 'undefined') return;
    const source = new EventSource('/api/v1/stream', { withCredentials: true });
    let retry: ReturnType<typeof setTimeout> | undefined;
    source.onopen = () => setState('live');
    source.onerror = () => {
      setState('lost');
      // EventSource retries dropped connections itself, but gives up on an HTTP error (e.g. a 401
      // or a 503 while the API restarts): start over after a pause. A 401 also shows the login
      // page through the next ordinary request.
      if (source.readyState === EventSource.CLOSED) {
        retry = setTimeout(() => setAttempt((n) => n + 1), RECONNECT_MS);
        void queryClient.invalidateQueries({ queryKey: statusKey });
      }
    };
    source.addEventListener('stats', (message: MessageEvent<string>) => {
      const snapshot = JSON.parse(message.data) as StatsSnapshot;
      queryClient.setQueryData(telemetryKeys.current, snapshot);
      listeners.current.forEach((listener) => listener(snapshot));
    });
    source.addEventListener('revision', () => {
      // A commit from elsewhere, an automatic rollback, or configuration replicated from the HA
      // peer: what runs, what is pending and the shared configuration changed.
      for (const queryKey of [revisionKeys.all, statusKey, changesKey, serviceKeys.all, firewallKey, haKeys.vipGroups, userKeys.list]) {
        void queryClient.invalidateQueries({ queryKey });
      }
    });
    source.addEventListener('event', (message: MessageEvent<string>) => {
      const event = JSON.parse(message.data) as EventRead;
      void queryClient.invalidateQueries({ queryKey: telemetryKeys.eventsAll });
      // The pair changed (paired, synced, a role moved): refresh the HA picture now, not at the next poll.
      if (event.kind.startsWith('ha.') || event.kind.startsWith('vrrp')) void queryClient.invalidateQueries({ queryKey: ['ha'] });
      if (event.severity !== 'info') {
        notifications.show({
          color: event.severity === 'critical' ? 'red' : 'yellow',
          title: event.service ? `${event.service}${event.backend ? ` → ${event.backend}` : ''}` : event.kind,
          message: event.message,
          autoClose: event.severity === 'critical' ? false : 8000,
        });
      }
    });
    return () => {
      clearTimeout(retry);
      source.close();
    };
  }, [queryClient, attempt]);

  // Stable across state changes, so subscribers (live charts) do not restart.
  const subscribe = useCallback((listener: StatsListener) => {
    listeners.current.add(listener);
    return () => {
      listeners.current.delete(listener);
    };
  }, []);
  const api = useMemo<StreamApi>(() => ({ state, subscribe }), [state, subscribe]);
  return <StreamContext.Provider value={api}>{children}</StreamContext.Provider>;
}
