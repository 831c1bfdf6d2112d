import { Button, Divider, Group, Text } from '@mantine/core';
import { modals } from '@mantine/modals';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import { drillMutation, maintenanceMutation, makeActiveMutation } from '../../api/queries/ha';
import { useCan } from '../../auth/useCurrentUser';
import type { HaStatus } from '../../client/types.gen';
import { DrillDialog, drillRun } from './DrillDialog';

/** Maintenance, "make this node active" and the failover drill, each asked before it runs. */
export function HandOverActions({ status }: { status: HaStatus }) {
  const canOperate = useCan('operateHa');
  const queryClient = useQueryClient();
  const maintenance = useMutation(maintenanceMutation(queryClient));
  const makeActive = useMutation(makeActiveMutation(queryClient));
  const drill = useMutation(drillMutation(queryClient));
  // The drill's dialog outlives the button: this node's role changes while the drill runs.
  const [drillOpen, setDrillOpen] = useState(false);
  if (!canOperate) return null;
  const { node, peer } = status;
  // A cluster's nodes all balance and announce by BGP: no VRRP hand-over to make or drill.
  const inCluster = status.cluster === 'writer' || status.cluster === 'member';
  const fail = (title: string) => (error: Error) => notifications.show({ color: 'red', title, message: errorMessage(error) });

  const toggleMaintenance = () =>
    modals.openConfirmModal({
      title: node.maintenance ? `Take ${node.name} out of maintenance?` : `Put ${node.name} into maintenance?`,
      children: (
        <Text size="sm">
          {inCluster
            ? node.maintenance
              ? `${node.name} announces the VIPs again and the router sends it its share of the flows.`
              : `${node.name} withdraws its routes: the router moves its flows to the cluster's other nodes, which send them to the same backends. It stays out until you end maintenance.`
            : node.maintenance
            ? `${node.name} may hold the VIPs again: it takes them back if it has the higher priority and preemption is on.`
            : peer
              ? `${node.name} gives up its VIPs at once and ${peer.name} takes them over. Connections are cut unless connection sync is on. It stays out until you end maintenance.`
              : `${node.name} has no peer: its VIPs go down and its services stop answering until maintenance ends.`}
        </Text>
      ),
      labels: { confirm: node.maintenance ? 'End maintenance' : 'Enter maintenance', cancel: 'Cancel' },
      confirmProps: { color: node.maintenance ? undefined : 'orange' },
      onConfirm: () =>
        maintenance.mutate(!node.maintenance, {
          onSuccess: (state) => notifications.show({ message: state.maintenance ? `${node.name} is in maintenance.` : `${node.name} left maintenance.` }),
          onError: fail('Maintenance not changed'),
        }),
    });

  const confirmMakeActive = () =>
    modals.openConfirmModal({
      title: `Make ${node.name} the active node?`,
      children: (
        <Text size="sm">
          {peer?.name ?? 'The peer'} steps down until {node.name} holds every VIP group, then becomes the standby. Connections are
          cut unless connection sync is on.
        </Text>
      ),
      labels: { confirm: 'Make active', cancel: 'Cancel' },
      onConfirm: () =>
        makeActive.mutate(undefined, {
          onSuccess: (result) => notifications.show({ color: 'green', title: `${node.name} is active`, message: `${result.message} (hand-over ${result.handover_ms} ms)` }),
          onError: fail('Not made active'),
        }),
    });

  const openDrill = () => {
    drill.reset();
    setDrillOpen(true);
  };
  const closeDrill = () => {
    setDrillOpen(false);
    drill.reset();
  };

  return (
    <>
      <Divider my="sm" />
      <Group gap="xs">
        <Button size="xs" variant="light" color={node.maintenance ? 'green' : 'orange'} loading={maintenance.isPending} onClick={toggleMaintenance}>
          {node.maintenance ? 'End maintenance' : 'Maintenance…'}
        </Button>
        {peer && !inCluster && node.role !== 'active' && (
          <Button size="xs" variant="light" loading={makeActive.isPending} onClick={confirmMakeActive}>
            Make this node active…
          </Button>
        )}
        {peer && !inCluster && node.role === 'active' && (
          <Button size="xs" variant="light" color="grape" loading={drill.isPending} onClick={openDrill}>
            Failover drill…
          </Button>
        )}
      </Group>
      {drillOpen && <DrillDialog run={drillRun(drill)} status={status} onRun={() => drill.mutate()} onClose={closeDrill} />}
    </>
  );
}
