import { queryOptions } from '@tanstack/react-query';
import { storageGetStorage } from '../../client/sdk.gen';

export const storageQuery = () =>
  queryOptions({
    queryKey: ['storage'] as const,
    queryFn: async ({ signal }) => (await storageGetStorage({ signal })).data,
    // Disks fill slowly; the alarm itself comes as a disk.filling event.
    refetchInterval: 60_000,
  });
