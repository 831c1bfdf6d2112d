import { queryOptions, type QueryClient } from '@tanstack/react-query';
import { firewallGetFirewall, firewallPutFirewall } from '../../client/sdk.gen';
import type { Firewall } from '../../client/types.gen';
import { invalidatePending } from './candidate';

// The root 'firewall' is a candidate view: a rollback refetches it (see revisions.ts).
export const firewallKey = ['firewall'] as const;

export const firewallQuery = () =>
  queryOptions({ queryKey: firewallKey, queryFn: async ({ signal }) => (await firewallGetFirewall({ signal })).data });

/** Saving changes the candidate only: the policy takes effect when the revision is applied. */
export const putFirewallMutation = (queryClient: QueryClient) => ({
  mutationFn: async (body: Firewall) => (await firewallPutFirewall({ body })).data,
  onSuccess: (saved: Firewall) => {
    queryClient.setQueryData(firewallKey, saved);
    return invalidatePending(queryClient);
  },
});
