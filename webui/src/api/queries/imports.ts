import type { QueryClient } from '@tanstack/react-query';
import { importsRunImport } from '../../client/sdk.gen';
import type { ImportRequest } from '../../client/types.gen';
import { invalidatePending } from './candidate';

/**
 * One mutation for both modes: a preview changes nothing; an apply rewrites the candidate, so
 * every configuration view and the pending-changes bar are refetched.
 */
export const importMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: ImportRequest) => (await importsRunImport({ body })).data,
  onSuccess: async (_: unknown, body: ImportRequest) => {
    if (body.mode !== 'apply') return;
    await Promise.all([
      invalidatePending(queryClient),
      queryClient.invalidateQueries({ predicate: (q) => ['services', 'vip-groups', 'node'].includes(String(q.queryKey[0])) }),
    ]);
  },
});
