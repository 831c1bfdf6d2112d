import { queryOptions, type QueryClient } from '@tanstack/react-query';
import { nodeGetConsoleAccess, nodePutConsoleAccess } from '../../client/sdk.gen';
import type { ConsoleAccess, ConsoleAccessUpdate } from '../../client/types.gen';

/** Whether this node's console menu asks for a password: node-local, takes effect at once. */
const consoleKeys = { access: ['node', 'console'] as const };

export const consoleAccessQuery = () =>
  queryOptions({ queryKey: consoleKeys.access, queryFn: async ({ signal }) => (await nodeGetConsoleAccess({ signal })).data });

export const putConsoleAccessMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: ConsoleAccessUpdate) => (await nodePutConsoleAccess({ body })).data,
  onSuccess: (access: ConsoleAccess) => queryClient.setQueryData(consoleKeys.access, access),
});
