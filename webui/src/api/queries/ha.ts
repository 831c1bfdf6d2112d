import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  firewallGetFirewall,
  nodeGetNode,
  nodePutNode,
  vipGroupsCreateGroup,
  vipGroupsDeleteGroup,
  vipGroupsListGroups,
  vipGroupsUpdateGroup,
} from '../../client/sdk.gen';
import type { Node, VipGroupCreate, VipGroupUpdate } from '../../client/types.gen';
import { invalidatePending } from './candidate';

export const haKeys = { vipGroups: ['vip-groups'] as const, node: ['node'] as const, firewall: ['firewall'] as const };

export const vipGroupsQuery = () =>
  queryOptions({ queryKey: haKeys.vipGroups, queryFn: async ({ signal }) => (await vipGroupsListGroups({ signal })).data });

export const nodeQuery = () =>
  queryOptions({ queryKey: haKeys.node, queryFn: async ({ signal }) => (await nodeGetNode({ signal })).data });

export const firewallQuery = () =>
  queryOptions({ queryKey: haKeys.firewall, queryFn: async ({ signal }) => (await firewallGetFirewall({ signal })).data });

const afterVipEdit = (queryClient: QueryClient) =>
  Promise.all([queryClient.invalidateQueries({ queryKey: haKeys.vipGroups }), invalidatePending(queryClient)]);

export const createVipGroupMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: VipGroupCreate) => (await vipGroupsCreateGroup({ body })).data,
  onSuccess: () => afterVipEdit(queryClient),
});

export type VipGroupChange = { groupId: number; change: VipGroupUpdate };

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

export const putNodeMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: Node) => (await nodePutNode({ body })).data,
  onSuccess: (node: Node) => {
    queryClient.setQueryData(haKeys.node, node);
    return invalidatePending(queryClient);
  },
});
