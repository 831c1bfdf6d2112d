import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  haFailoverDrill,
  haHaDiff,
  haHaStatus,
  haMaintenance,
  haMakeActive,
  haPair,
  haPairingCode,
  haPairUpgradeStatus,
  haResolve,
  haStartPairUpgrade,
  haStopPairUpgrade,
  haSyncNow,
  haUnpair,
  nodeGetNode,
  nodePatchNode,
  vipGroupsCreateGroup,
  vipGroupsDeleteGroup,
  vipGroupsListGroups,
  vipGroupsUpdateGroup,
} from '../../client/sdk.gen';
import type {
  Node,
  NodeSettingsUpdate,
  PairRequest,
  PairUpgradeStatus,
  ResolveRequest,
  VipGroupCreate,
  VipGroupUpdate,
} from '../../client/types.gen';
import { invalidatePending } from './candidate';

export const haKeys = {
  vipGroups: ['vip-groups'] as const,
  node: ['node'] as const,
  status: ['ha', 'status'] as const,
  diff: ['ha', 'diff'] as const,
  upgrade: ['ha', 'upgrade'] as const,
};

/** Roles, peer reachability and sync move on their own: poll every few seconds. */
export const haStatusQuery = () =>
  queryOptions({
    queryKey: haKeys.status,
    queryFn: async ({ signal }) => (await haHaStatus({ signal })).data,
    refetchInterval: 3_000,
  });

/** Asks the peer: only while someone looks at a conflict or asks for it. */
export const haDiffQuery = () =>
  queryOptions({ queryKey: haKeys.diff, queryFn: async ({ signal }) => (await haHaDiff({ signal })).data, staleTime: 0 });

// A pair upgrade moves by the step (minutes each): a look every few seconds while it runs.
const PAIR_UPGRADE_POLL_MS = 3_000;

/** The pair upgrade this node drives or drove (null: none). */
export const pairUpgradeQuery = () =>
  queryOptions({
    queryKey: haKeys.upgrade,
    queryFn: async ({ signal }) => (await haPairUpgradeStatus({ signal })).data,
    refetchInterval: (query) =>
      query.state.data?.upgrade?.state === 'running' || query.state.data?.peer_upgrade?.state === 'running'
        ? PAIR_UPGRADE_POLL_MS
        : false,
  });

const afterHa = (queryClient: QueryClient) =>
  Promise.all([queryClient.invalidateQueries({ queryKey: ['ha'] }), queryClient.invalidateQueries({ queryKey: ['status'] })]);

/**
 * Pairing or resolving a conflict can replace this node's whole configuration (and accounts):
 * everything cached may be stale, except who is signed in.
 */
const afterConfigReplaced = (queryClient: QueryClient) =>
  queryClient.invalidateQueries({ predicate: (query) => query.queryKey[0] !== 'auth' });

export const pairingCodeMutation = () => ({
  mutationFn: async () => (await haPairingCode()).data,
});

export const pairMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: PairRequest) => (await haPair({ body })).data,
  onSuccess: () => afterConfigReplaced(queryClient),
});

export const unpairMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => (await haUnpair()).data,
  onSettled: () => afterHa(queryClient),
});

export const syncNowMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => (await haSyncNow()).data,
  onSettled: () => afterHa(queryClient),
});

export const resolveMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: ResolveRequest) => (await haResolve({ body })).data,
  onSettled: () => afterConfigReplaced(queryClient),
});

export const maintenanceMutation = (queryClient: QueryClient) => ({
  mutationFn: async (enabled: boolean) => (await haMaintenance({ body: { enabled } })).data,
  onSettled: () => afterHa(queryClient),
});

export const makeActiveMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => (await haMakeActive()).data,
  onSettled: () => afterHa(queryClient),
});

export const drillMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => (await haFailoverDrill()).data,
  onSettled: () => afterHa(queryClient),
});

/** Answers once the pair was found ready, with the record the query then follows. */
export const startPairUpgradeMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => (await haStartPairUpgrade()).data,
  onSuccess: (upgrade: PairUpgradeStatus) => queryClient.setQueryData(haKeys.upgrade, upgrade),
});

/** Asks the node that drives the pair upgrade to stop it at its next step. */
export const stopPairUpgradeMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => (await haStopPairUpgrade()).data,
  onSuccess: (upgrade: PairUpgradeStatus) => queryClient.setQueryData(haKeys.upgrade, upgrade),
});

export const vipGroupsQuery = () =>
  queryOptions({ queryKey: haKeys.vipGroups, queryFn: async ({ signal }) => (await vipGroupsListGroups({ signal })).data });

export const nodeQuery = () =>
  queryOptions({ queryKey: haKeys.node, queryFn: async ({ signal }) => (await nodeGetNode({ signal })).data });

const afterVipEdit = (queryClient: QueryClient) =>
  Promise.all([queryClient.invalidateQueries({ queryKey: haKeys.vipGroups }), invalidatePending(queryClient)]);

export const createVipGroupMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: VipGroupCreate) => (await vipGroupsCreateGroup({ body })).data,
  onSuccess: () => afterVipEdit(queryClient),
});

type VipGroupChange = { groupId: number; change: VipGroupUpdate };

/** Edits a VIP group: a pending change, applied with the next revision. */
export const updateVipGroupMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ groupId, change }: VipGroupChange) =>
    (await vipGroupsUpdateGroup({ path: { group_id: groupId }, body: change })).data,
  onSuccess: () => afterVipEdit(queryClient),
});

export const deleteVipGroupMutation = (queryClient: QueryClient) => ({
  mutationFn: async (groupId: number) => {
    await vipGroupsDeleteGroup({ path: { group_id: groupId } });
  },
  onSuccess: () => afterVipEdit(queryClient),
});

/** Sends only the settings a form shows: the others (VIP and tracked interfaces…) are kept. */
export const patchNodeMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: NodeSettingsUpdate) => (await nodePatchNode({ body })).data,
  onSuccess: (node: Node) => {
    queryClient.setQueryData(haKeys.node, node);
    return invalidatePending(queryClient);
  },
});
