import { queryOptions, type QueryClient } from '@tanstack/react-query';
import { bgpDeleteBgp, bgpGetBgp, bgpGetBgpStatus, bgpPutBgp } from '../../client/sdk.gen';
import type { BgpRead, BgpWrite } from '../../client/types.gen';
import { invalidatePending } from './candidate';

// The root 'bgp' is a candidate view: a rollback refetches it (see revisions.ts).
const bgpKey = ['bgp'] as const;
export const bgpStatusKey = ['bgp-status'] as const;

/** This node's BGP settings (null: none): node-local, never replicated. */
export const bgpSettingsQuery = () =>
  queryOptions({ queryKey: bgpKey, queryFn: async ({ signal }) => (await bgpGetBgp({ signal })).data ?? null });

/** FRR as it runs now (sessions, BFD, what is announced and why): live, like the HA state. */
export const bgpStatusQuery = () =>
  queryOptions({
    queryKey: bgpStatusKey,
    queryFn: async ({ signal }) => (await bgpGetBgpStatus({ signal })).data,
    refetchInterval: 3_000,
  });

/** Saving changes the candidate only: FRR changes when the revision is applied. */
export const putBgpMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: BgpWrite) => (await bgpPutBgp({ body })).data,
  onSuccess: (saved: BgpRead) => {
    queryClient.setQueryData(bgpKey, saved);
    return invalidatePending(queryClient);
  },
});

/** Removing BGP is a pending change too: at commit FRR withdraws the VIPs and closes its sessions. */
export const removeBgpMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => {
    await bgpDeleteBgp();
  },
  onSuccess: () => {
    queryClient.setQueryData(bgpKey, null);
    return invalidatePending(queryClient);
  },
});
