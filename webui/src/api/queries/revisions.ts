import { queryOptions, type QueryClient } from '@tanstack/react-query';
import {
  revisionsCommit,
  revisionsConfirm,
  revisionsDiff,
  revisionsGetRevision,
  revisionsListRevisions,
  revisionsPending,
  revisionsRollback,
} from '../../client/sdk.gen';
import type { CommitRequest, RollbackRequest } from '../../client/types.gen';
import { changesKey, statusKey } from './candidate';

export const revisionKeys = {
  all: ['revisions'] as const,
  list: () => ['revisions', 'list'] as const,
  detail: (number: number) => ['revisions', 'detail', number] as const,
  diff: (from: number | null, to: number | null) => ['revisions', 'diff', from, to] as const,
};

export const changesQuery = () =>
  queryOptions({
    queryKey: changesKey,
    queryFn: async ({ signal }) => (await revisionsPending({ signal })).data,
  });

export const revisionsQuery = () =>
  queryOptions({
    queryKey: revisionKeys.list(),
    queryFn: async ({ signal }) => (await revisionsListRevisions({ query: { limit: 200 }, signal })).data,
  });

export const revisionQuery = (number: number) =>
  queryOptions({
    queryKey: revisionKeys.detail(number),
    queryFn: async ({ signal }) => (await revisionsGetRevision({ path: { number }, signal })).data,
    staleTime: Infinity, // a revision never changes, except its state (refetched via the list)
  });

/** from = null: the empty configuration; to = null: the uncommitted candidate. */
export const diffQuery = (from: number | null, to: number | null) =>
  queryOptions({
    queryKey: revisionKeys.diff(from, to),
    queryFn: async ({ signal }) =>
      (await revisionsDiff({ query: { from: from ?? undefined, to: to ?? undefined }, signal })).data,
  });

/**
 * Committing, rolling back or confirming changes the revision list, what runs (status) and what
 * is pending. A rollback also replaces the candidate, so every configuration view is refetched.
 */
function afterRevision(queryClient: QueryClient, candidateReplaced: boolean) {
  return Promise.all([
    queryClient.invalidateQueries({ queryKey: revisionKeys.all }),
    queryClient.invalidateQueries({ queryKey: changesKey }),
    queryClient.invalidateQueries({ queryKey: statusKey }),
    candidateReplaced ? queryClient.invalidateQueries({ predicate: (q) => isCandidateQuery(q.queryKey) }) : undefined,
  ]);
}

const CANDIDATE_ROOTS = new Set(['services', 'vip-groups', 'node', 'firewall', 'network', 'bgp']);
const isCandidateQuery = (key: readonly unknown[]) => CANDIDATE_ROOTS.has(String(key[0]));

export const commitMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: CommitRequest) => (await revisionsCommit({ body })).data,
  onSettled: () => afterRevision(queryClient, false),
});

export type RollbackInput = { number: number } & RollbackRequest;

export const rollbackMutation = (queryClient: QueryClient) => ({
  mutationFn: async ({ number, ...body }: RollbackInput) => (await revisionsRollback({ path: { number }, body })).data,
  onSettled: () => afterRevision(queryClient, true),
});

export const confirmMutation = (queryClient: QueryClient) => ({
  mutationFn: async (number: number) => (await revisionsConfirm({ path: { number } })).data,
  onSettled: () => afterRevision(queryClient, false),
});
