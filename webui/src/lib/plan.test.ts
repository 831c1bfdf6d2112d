import type { Plan } from '../client/types.gen';
import { changesManagementAccess, suggestConfirmDeadline } from './plan';

const plan = (items: Plan['items'], disruptive = false): Plan => ({ items, disruptive, warnings: [] });
const backend = { kind: 'backend', action: 'change' as const, target: 'web → 198.51.100.1:80', detail: 'weight 1 → 0' };
const firewall = { kind: 'firewall', action: 'change' as const, target: 'management access', detail: '…' };

describe('commit advice', () => {
  it('suggests a confirmation deadline for a firewall change, though it is not disruptive', () => {
    expect(changesManagementAccess(plan([backend, firewall]))).toBe(true);
    expect(suggestConfirmDeadline(plan([backend, firewall]))).toBe(true);
  });
  it('suggests it for disruptive plans, and not for a plain drain', () => {
    expect(suggestConfirmDeadline(plan([backend], true))).toBe(true);
    expect(suggestConfirmDeadline(plan([backend]))).toBe(false);
    expect(suggestConfirmDeadline(undefined)).toBe(false);
  });
});
