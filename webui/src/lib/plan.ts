/** Advice for committing a plan of pending changes. */
import type { Plan } from '../client/types.gen';

/** A change to who may reach the management ports can cut off the person applying it. */
export function changesManagementAccess(plan: Plan | undefined): boolean {
  return !!plan?.items.some((item) => item.kind === 'firewall');
}

/**
 * Commit with a confirmation deadline (automatic rollback) when the change could cut traffic
 * or the operator's own access: a mistake then undoes itself.
 */
export function suggestConfirmDeadline(plan: Plan | undefined): boolean {
  return !!plan?.disruptive || changesManagementAccess(plan);
}
