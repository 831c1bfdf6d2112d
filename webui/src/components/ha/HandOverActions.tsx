import { Alert, Button, Divider, Group, Stack, Text } from '@mantine/core';
import { modals } from '@mantine/modals';
import { notifications } from '@mantine/notifications';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import { drillMutation, maintenanceMutation, makeActiveMutation } from '../../api/queries/ha';
import { useCan } from '../../auth/useCurrentUser';
import type { DrillResult, HaStatus } from '../../client/types.gen';

/** Maintenance, "make this node active" and the failover drill, each asked before it runs. */
export function HandOverActions({ status }: { status: HaStatus }) {
  const canOperate = useCan('operateHa');
  const queryClient = useQueryClient();
  const maintenance = useMutation(maintenanceMutation(queryClient));
  const makeActive = useMutation(makeActiveMutation(queryClient));
  const drill = useMutation(drillMutation(queryClient));
  const [drillResult, setDrillResult] = useState<DrillResult | null>(null);
  if (!canOperate) return null;
  const { node, peer } = status;
  const fail = (title: string) => (error: Error) => notifications.show({ color: 'red', title, message: errorMessage(error) });

  const toggleMaintenance = () =>
    modals.openConfirmModal({
      title: node.maintenance ? `Take ${node.name} out of maintenance?` : `Put ${node.name} into maintenance?`,
      children: (
        <Text size="sm">
          {node.maintenance
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

  const confirmDrill = () =>
    modals.openConfirmModal({
      title: 'Run a failover drill?',
      children: (
        <Text size="sm">
          {node.name} steps down while every service VIP is probed 20 times a second; the drill times how long {peer?.name ?? 'the peer'}{' '}
          takes to hold the VIPs, then ends {node.name}’s maintenance. Traffic really moves: run it when a short interruption is acceptable.
        </Text>
      ),
      labels: { confirm: 'Run the drill', cancel: 'Cancel' },
      confirmProps: { color: 'orange' },
      onConfirm: () => drill.mutate(undefined, { onSuccess: setDrillResult, onError: fail('The drill did not run') }),
    });

  return (
    <>
      <Divider my="sm" />
      <Group gap="xs">
        <Button size="xs" variant="light" color={node.maintenance ? 'green' : 'orange'} loading={maintenance.isPending} onClick={toggleMaintenance}>
          {node.maintenance ? 'End maintenance' : 'Maintenance…'}
        </Button>
        {peer && node.role !== 'active' && (
          <Button size="xs" variant="light" loading={makeActive.isPending} onClick={confirmMakeActive}>
            Make this node active…
          </Button>
        )}
        {peer && node.role === 'active' && (
          <Button size="xs" variant="light" color="grape" loading={drill.isPending} onClick={confirmDrill}>
            Failover drill…
          </Button>
        )}
      </Group>
      {drillResult && <DrillOutcome result={drillResult} onClose={() => setDrillResult(null)} />}
    </>
  );
}

function DrillOutcome({ result, onClose }: { result: DrillResult; onClose: () => void }) {
  const ok = result.handover_ms !== null && result.probe_failed === 0;
  return (
    <Alert mt="sm" color={result.handover_ms === null ? 'red' : ok ? 'green' : 'yellow'} title="Failover drill" withCloseButton onClose={onClose} data-testid="drill-result">
      <Stack gap={2}>
        <Text size="sm">
          {result.handover_ms === null ? 'The peer did not take over every VIP group.' : `The peer held every VIP group after ${result.handover_ms} ms.`}
        </Text>
        <Text size="sm">
          Probe: {result.probe_failed} of {result.probe_total} connections to {result.probe_targets.join(', ') || 'the VIPs'} failed.
        </Text>
        {(result.connections_before !== null || result.peer_connections_after !== null) && (
          <Text size="sm">
            Connection entries: {result.connections_before ?? '—'} here before, {result.peer_connections_after ?? '—'} on the peer after.
          </Text>
        )}
        {result.message && <Text size="xs" c="dimmed">{result.message}</Text>}
      </Stack>
    </Alert>
  );
}
