import { queryOptions } from '@tanstack/react-query';
import { statusGetStatus } from '../../client/sdk.gen';
import { statusKey } from './candidate';

export const statusQuery = () =>
  queryOptions({
    queryKey: statusKey,
    queryFn: async ({ signal }) => (await statusGetStatus({ signal })).data,
    // The data plane can change under us (keepalived dies, a module is loaded): poll gently.
    refetchInterval: 15_000,
  });
