/**
 * Query keys shared across resources, and the invalidation every candidate edit needs: an edit
 * changes what GET /changes and GET /status report (the pending-changes bar reads both).
 */
import type { QueryClient } from '@tanstack/react-query';

export const changesKey = ['changes'] as const;
export const statusKey = ['status'] as const;

export function invalidatePending(queryClient: QueryClient): Promise<void> {
  return Promise.all([
    queryClient.invalidateQueries({ queryKey: changesKey }),
    queryClient.invalidateQueries({ queryKey: statusKey }),
  ]).then(() => undefined);
}
