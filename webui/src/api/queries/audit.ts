import { queryOptions } from '@tanstack/react-query';
import { auditListAudit } from '../../client/sdk.gen';

export type AuditFilters = { action?: string; username?: string; revision?: number; since?: string };

const auditKeys = { all: ['audit'] as const, list: (filters: AuditFilters) => ['audit', filters] as const };

export const auditQuery = (filters: AuditFilters) =>
  queryOptions({
    queryKey: auditKeys.list(filters),
    queryFn: async ({ signal }) => (await auditListAudit({ query: { ...filters, limit: 200 }, signal })).data,
  });
