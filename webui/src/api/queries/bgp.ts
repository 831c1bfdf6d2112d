import { queryOptions } from '@tanstack/react-query';
import { bgpGetBgp, bgpGetBgpStatus } from '../../client/sdk.gen';

/** This node's BGP settings (null: none): node-local, never replicated. */
export const bgpSettingsQuery = () =>
  queryOptions({ queryKey: ['bgp'] as const, queryFn: async ({ signal }) => (await bgpGetBgp({ signal })).data ?? null });

/** FRR as it runs now (sessions, BFD, what is announced and why): live, like the HA state. */
export const bgpStatusQuery = () =>
  queryOptions({
    queryKey: ['bgp-status'] as const,
    queryFn: async ({ signal }) => (await bgpGetBgpStatus({ signal })).data,
    refetchInterval: 3_000,
  });
