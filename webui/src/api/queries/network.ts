import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  networkDeleteNetwork,
  networkGetClock,
  networkGetNetwork,
  networkGetTakeover,
  networkListInterfaces,
  networkListRoutes,
  networkPutNetwork,
} from '../../client/sdk.gen';
import type { NetworkConfig } from '../../client/types.gen';
import { invalidatePending } from './candidate';

// The root 'network' is a candidate view: a rollback refetches it (see revisions.ts).
const networkKey = ['network'] as const;

/** This node's network as Fulcrum manages it; null while it does not. */
export const networkQuery = () =>
  queryOptions({ queryKey: networkKey, queryFn: async ({ signal }) => (await networkGetNetwork({ signal })).data });

/** The kernel's interfaces: live link state and counters, like the other live views. */
export const interfacesQuery = () =>
  queryOptions({
    queryKey: ['kernel-interfaces'] as const,
    queryFn: async ({ signal }) => (await networkListInterfaces({ signal })).data,
    refetchInterval: 3_000,
  });

/** The kernel's routes: they change rarely (a DHCP lease, an apply), so a slower poll. */
export const kernelRoutesQuery = () =>
  queryOptions({
    queryKey: ['kernel-routes'] as const,
    queryFn: async ({ signal }) => (await networkListRoutes({ signal })).data,
    refetchInterval: 10_000,
  });

/** The clock's synchronisation moves slowly: its error grows or shrinks by microseconds a second. */
export const clockQuery = () =>
  queryOptions({
    queryKey: ['clock'] as const,
    queryFn: async ({ signal }) => (await networkGetClock({ signal })).data,
    refetchInterval: 10_000,
  });

/**
 * "Manage this node's network": the API reads what the kernel runs now into a first network document
 * (nothing is saved), managed on the interface holding `address`, the one this page was opened at.
 * On demand, so a mutation: its pending state and error belong to the button.
 */
export const takeOverMutation = () => ({
  mutationFn: async (address: string) => (await networkGetTakeover({ query: { address } })).data,
});

/** Saving changes the candidate only: the network changes when the revision is applied. */
export const putNetworkMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: NetworkConfig) => (await networkPutNetwork({ body })).data,
  onSuccess: (saved: NetworkConfig) => {
    queryClient.setQueryData(networkKey, saved);
    return Promise.all([invalidatePending(queryClient), queryClient.invalidateQueries({ queryKey: ['kernel-interfaces'] })]);
  },
});

export const stopManagingMutation = (queryClient: QueryClient) => ({
  mutationFn: async () => {
    await networkDeleteNetwork();
  },
  onSuccess: () => {
    queryClient.setQueryData(networkKey, null);
    return invalidatePending(queryClient);
  },
});
