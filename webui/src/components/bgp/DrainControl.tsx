import { Alert } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { errorMessage } from '../../api/errors';
import { bgpStatusKey } from '../../api/queries/bgp';
import { haStatusQuery, maintenanceMutation } from '../../api/queries/ha';
import { useCan } from '../../auth/useCurrentUser';
import { ConfirmButton } from '../ConfirmButton';

/**
 * "Drain this node" of a BGP cluster: maintenance makes the node unfit to announce
 * (fulcrum.apply.fitness), so it withdraws every VIP and the routers send its flows to the other
 * nodes, which pick the same backends (mh) and continue them. Returning it to service announces again.
 */
export function DrainControl() {
  const canOperate = useCan('operateHa');
  const ha = useQuery(haStatusQuery());
  const queryClient = useQueryClient();
  const maintenance = useMutation({
    ...maintenanceMutation(queryClient),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: bgpStatusKey }),
  });
  if (!canOperate || !ha.data) return null;
  const { node, peer } = ha.data;
  const alsoPair = peer ? ` As in the pair, ${node.name}’s VRRP addresses move to ${peer.name}.` : '';
  return (
    <>
      {node.maintenance ? (
        <ConfirmButton
          color="green"
          loading={maintenance.isPending}
          title={`Return ${node.name} to service?`}
          consequence={`${node.name} leaves maintenance and announces its VIPs again as soon as it is fit; the routers then send it a share of the flows.`}
          confirmLabel="Return to service"
          onConfirm={() => maintenance.mutate(false)}
        >
          Return to service
        </ConfirmButton>
      ) : (
        <ConfirmButton
          color="orange"
          loading={maintenance.isPending}
          title={`Drain ${node.name}?`}
          consequence={
            `${node.name} goes into maintenance and withdraws every VIP from the routers. They send its flows to the other nodes, ` +
            'which pick the same backends (mh) and carry its held connections on; with no other node announcing, the VIPs become ' +
            `unreachable. It stays drained until you return it to service.${alsoPair}`
          }
          confirmLabel="Drain"
          onConfirm={() => maintenance.mutate(true)}
        >
          Drain this node
        </ConfirmButton>
      )}
      {maintenance.error && <Alert color="red">{errorMessage(maintenance.error)}</Alert>}
    </>
  );
}
