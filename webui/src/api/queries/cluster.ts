import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  clusterAddMember,
  clusterClusterBgpStatus,
  clusterClusterStatus,
  clusterDrainMember,
  clusterRemoveMember,
  clusterSyncMember,
} from '../../client/sdk.gen';
import type { PairRequest } from '../../client/types.gen';

const clusterKey = ['cluster'] as const;

/** Every node of the cluster as the writer sees it: members answer, sync and carry traffic on their own. */
export const clusterStatusQuery = () =>
  queryOptions({
    queryKey: clusterKey,
    queryFn: async ({ signal }) => (await clusterClusterStatus({ signal })).data,
    refetchInterval: 3_000,
  });

/**
 * Every node's BGP as its own FRR runs it, asked only while the page is open: the writer asks each
 * member now (a member asks the writer), so it polls slower than the picture.
 */
export const clusterBgpQuery = () =>
  queryOptions({
    queryKey: [...clusterKey, 'bgp'] as const,
    queryFn: async ({ signal }) => (await clusterClusterBgpStatus({ signal })).data,
    refetchInterval: 10_000,
  });

const afterCluster = (queryClient: QueryClient) =>
  Promise.all([queryClient.invalidateQueries({ queryKey: clusterKey }), queryClient.invalidateQueries({ queryKey: ['ha'] })]);

/** On the writer: the new member's address and code; the writer's configuration replaces the member's. */
export const addMemberMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: PairRequest) => (await clusterAddMember({ body })).data,
  onSettled: () => afterCluster(queryClient),
});

type Drain = { name: string; enabled: boolean };

/** A drained member withdraws its routes; undrained, it announces again. */
export const drainMemberMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ name, enabled }: Drain) => (await clusterDrainMember({ path: { name }, body: { enabled } })).data,
  onSettled: () => afterCluster(queryClient),
});

type Sync = { name: string; force: boolean };

export const syncMemberMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ name, force }: Sync) => (await clusterSyncMember({ path: { name }, body: { force } })).data,
  onSettled: () => afterCluster(queryClient),
});

type Remove = { name: string; force: boolean };

export const removeMemberMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ name, force }: Remove) => (await clusterRemoveMember({ path: { name }, query: { force } })).data,
  onSettled: () => afterCluster(queryClient),
});
