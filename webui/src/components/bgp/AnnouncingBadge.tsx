import { Badge } from '@mantine/core';
import type { BgpView } from '../../client/types.gen';

/** Whether a node's bgpd announces the VIPs now: withdrawn means it chose not to (fitness says why). */
export function AnnouncingBadge({ view }: { view: BgpView }) {
  if (view.announcing === true) return <Badge color="green">announcing</Badge>;
  if (view.announcing === false) return <Badge color="orange">withdrawn</Badge>;
  return <Badge color="gray">nothing to announce</Badge>;
}
