import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  alertsCreateChannel,
  alertsCreateRule,
  alertsDeleteChannel,
  alertsDeleteRule,
  alertsListChannels,
  alertsListRules,
  alertsReplaceChannel,
  alertsTestChannel,
} from '../../client/sdk.gen';
import type { ChannelWrite, RuleWrite } from '../../client/types.gen';

const alertKeys = { channels: ['alerts', 'channels'] as const, rules: ['alerts', 'rules'] as const };

/** Channels with their last delivery outcome: polled, since the dispatcher changes it in the background. */
export const alertChannelsQuery = () =>
  queryOptions({
    queryKey: alertKeys.channels,
    queryFn: async ({ signal }) => (await alertsListChannels({ signal })).data,
    refetchInterval: 5_000,
  });

export const alertRulesQuery = () =>
  queryOptions({ queryKey: alertKeys.rules, queryFn: async ({ signal }) => (await alertsListRules({ signal })).data });

export const createChannelMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: ChannelWrite) => (await alertsCreateChannel({ body })).data,
  onSuccess: () => queryClient.invalidateQueries({ queryKey: alertKeys.channels }),
});

export type ChannelChange = { channelId: number; body: ChannelWrite };

export const replaceChannelMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ channelId, body }: ChannelChange) => (await alertsReplaceChannel({ path: { channel_id: channelId }, body })).data,
  onSuccess: () => queryClient.invalidateQueries({ queryKey: alertKeys.channels }),
});

export const deleteChannelMutation = (queryClient: QueryClient) => ({
  mutationFn: async (channelId: number) => {
    await alertsDeleteChannel({ path: { channel_id: channelId } });
  },
  // A channel's rules go with it.
  onSuccess: () => queryClient.invalidateQueries({ queryKey: ['alerts'] }),
});

/** Send a test alert; the answer is the server's (SMTP reply, HTTP status, where the syslog line went). */
export const testChannelMutation = (queryClient: QueryClient) => ({
  mutationFn: async (channelId: number) => (await alertsTestChannel({ path: { channel_id: channelId } })).data,
  onSettled: () => queryClient.invalidateQueries({ queryKey: alertKeys.channels }),
});

export const createRuleMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: RuleWrite) => (await alertsCreateRule({ body })).data,
  onSuccess: () => queryClient.invalidateQueries({ queryKey: alertKeys.rules }),
});

export const deleteRuleMutation = (queryClient: QueryClient) => ({
  mutationFn: async (ruleId: number) => {
    await alertsDeleteRule({ path: { rule_id: ruleId } });
  },
  onSuccess: () => queryClient.invalidateQueries({ queryKey: alertKeys.rules }),
});
