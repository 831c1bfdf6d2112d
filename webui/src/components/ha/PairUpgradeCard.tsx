import { Alert, Anchor, Badge, Card, Group, Loader, Stack, Table, Text, Title, type MantineColor } from '@mantine/core';
import { IconCheck, IconCircleDashed, IconPlayerSkipForward, IconPlayerStop, IconX } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { errorMessage } from '../../api/errors';
import { firmwareQuery } from '../../api/queries/firmware';
import { pairUpgradeQuery, startPairUpgradeMutation, stopPairUpgradeMutation } from '../../api/queries/ha';
import { useCan } from '../../auth/useCurrentUser';
import type { HaStatus, PairUpgrade, PairUpgradeStatus, PairUpgradeStep } from '../../client/types.gen';
import { dateTime } from '../../lib/format';
import { ConfirmButton } from '../ConfirmButton';

/** What each step does, in the words of the node that drives it (`node`) and its peer. */
const STEP_LABEL: Record<PairUpgradeStep['name'], (u: PairUpgrade) => string> = {
  send_bundle: (u) => `Send the bundle to ${u.peer}`,
  install_peer: (u) => `Install it on ${u.peer}`,
  restart_peer: (u) => `Restart ${u.peer}; wait until it is good, standby and in sync`,
  install_self: (u) => `Install it on ${u.node}`,
  hand_over: (u) => `Hand the VIPs over to ${u.peer} (the one failover)`,
  restart_self: (u) => `Restart ${u.node} into the new version`,
  rejoin: (u) => `${u.node} leaves maintenance and rejoins`,
};

const UPGRADE_COLOR: Record<PairUpgrade['state'], MantineColor> = { running: 'blue', done: 'green', failed: 'red', stopped: 'orange' };

function badgeText(record: PairUpgrade): string {
  switch (record.state) {
    case 'running':
      return record.stop_requested_by ? `stopping (asked by ${record.stop_requested_by})` : `upgrading to ${record.version}`;
    case 'done':
      return `done: ${record.version}`;
    case 'failed':
      return 'failed';
    default:
      return 'stopped';
  }
}

function StepIcon({ state }: { state: PairUpgradeStep['state'] }) {
  switch (state) {
    case 'done':
      return <IconCheck size={16} color="var(--mantine-color-green-6)" aria-label="done" />;
    case 'failed':
      return <IconX size={16} color="var(--mantine-color-red-6)" aria-label="failed" />;
    case 'running':
      return <Loader size={14} aria-label="running" />;
    case 'skipped':
      return <IconPlayerSkipForward size={16} color="var(--mantine-color-dimmed)" aria-label="skipped" />;
    case 'stopped':
      return <IconPlayerStop size={16} color="var(--mantine-color-orange-6)" aria-label="stopped" />;
    default:
      return <IconCircleDashed size={16} color="var(--mantine-color-dimmed)" aria-label="pending" />;
  }
}

/**
 * The upgrade to show: one running (this node's, else the peer's), else the newer of the two. The
 * peer's is what it sent with its last status: how the standby follows an upgrade the active node
 * drives, also while that node restarts itself and its own dashboard is away.
 */
function shownUpgrade(status: PairUpgradeStatus | undefined): { record: PairUpgrade | null; fromPeer: boolean } {
  const own = status?.upgrade ?? null;
  const peers = status?.peer_upgrade ?? null;
  if (own?.state === 'running' || !peers) return { record: own, fromPeer: false };
  if (peers.state === 'running' || !own) return { record: peers, fromPeer: true };
  return Date.parse(peers.started_at) > Date.parse(own.started_at)
    ? { record: peers, fromPeer: true }
    : { record: own, fromPeer: false };
}

/**
 * Upgrading the pair with one failover, from the active node: the standby first, then the
 * hand-over, then this node. Shows the last pair upgrade step by step, this node's or the one its
 * peer drives; its steps take minutes and the page polls while one runs.
 */
export function PairUpgradeCard({ status }: { status: HaStatus }) {
  const canUpgrade = useCan('upgradeFirmware');
  const queryClient = useQueryClient();
  const upgrade = useQuery(pairUpgradeQuery());
  const firmware = useQuery(firmwareQuery());
  const start = useMutation(startPairUpgradeMutation(queryClient));
  const stop = useMutation(stopPairUpgradeMutation(queryClient));
  const { record, fromPeer } = shownUpgrade(upgrade.data);
  const running = record?.state === 'running';
  const bundle = firmware.data?.bundle ?? null;
  const { node, peer } = status;
  if (!peer || (!record && node.role !== 'active')) return null;
  const first = record?.peer ?? peer.name;
  const then = record?.node ?? node.name;

  return (
    <Card withBorder data-testid="pair-upgrade">
      <Group justify="space-between" align="flex-start">
        <div>
          <Title order={4}>Pair upgrade</Title>
          <Text size="xs" c="dimmed">
            {first} first, then one failover to it, then {then}; the VIPs move once.
          </Text>
          {fromPeer && record && (
            <Text size="xs" c="dimmed" data-testid="pair-upgrade-driven-by">
              Driven by {record.node}
              {upgrade.data?.peer_seen_at ? `, as it last reported at ${dateTime(upgrade.data.peer_seen_at)}` : ''}
              {running ? `; it is away while it restarts, and this page follows it when it is back.` : '.'}
            </Text>
          )}
        </div>
        {record && (
          <Badge color={UPGRADE_COLOR[record.state]} variant="light" data-testid="pair-upgrade-state">
            {badgeText(record)}
          </Badge>
        )}
      </Group>
      {record && <UpgradeSteps record={record} />}
      {canUpgrade && running && !fromPeer && !record.stop_requested_by && (
        <Group justify="flex-end" mt="sm">
          <ConfirmButton
            title={`Stop the upgrade to ${record.version}?`}
            consequence={`It stops at its next step, within seconds; what is under way (the bundle streaming, an install, a restart) runs to its end. A node whose new version is installed but not yet restarted into boots it at its next restart (System → Firmware shows it). After the hand-over, ${record.node} leaves maintenance and is the standby again.`}
            confirmLabel="Stop the upgrade"
            color="red"
            loading={stop.isPending}
            onConfirm={() => stop.mutate()}
          >
            Stop the upgrade
          </ConfirmButton>
        </Group>
      )}
      {stop.error && (
        <Alert color="red" title="The pair upgrade was not stopped" mt="sm">
          {errorMessage(stop.error)}
        </Alert>
      )}
      {canUpgrade && node.role === 'active' && !running && (
        <Stack gap="xs" mt="sm">
          {firmware.data && !firmware.data.ab_system ? (
            <Text size="sm" c="dimmed" data-testid="pair-upgrade-not-ab">
              {node.name} cannot be upgraded here: {firmware.data.detail}
            </Text>
          ) : bundle ? (
            <Group justify="space-between">
              <Text size="sm">
                Bundle {bundle.version} is waiting on {node.name}. {node.name} runs {node.software_version}, {peer.name}{' '}
                {peer.software_version ?? 'an unknown version'}.
              </Text>
              <ConfirmButton
                title={`Upgrade ${peer.name} and ${node.name} to ${bundle.version}?`}
                consequence={`${peer.name} is upgraded and restarted first, while ${node.name} keeps serving. Once ${peer.name} is back, healthy and in sync, it takes the VIPs over (the one failover; connections survive where connection sync is on). Then ${node.name} is upgraded, restarts and rejoins as the standby. A new system that is not healthy rolls back by itself and the upgrade stops there.`}
                confirmLabel="Upgrade the pair"
                loading={start.isPending}
                onConfirm={() => start.mutate()}
              >
                Upgrade the pair to {bundle.version}
              </ConfirmButton>
            </Group>
          ) : (
            <Text size="sm" c="dimmed">
              To upgrade the pair, upload a bundle on {node.name}’s{' '}
              <Anchor component={Link} to="/system/firmware">
                Firmware
              </Anchor>{' '}
              page first.
            </Text>
          )}
          {start.error && (
            <Alert color="red" title="The pair upgrade did not start">
              {errorMessage(start.error)}
            </Alert>
          )}
        </Stack>
      )}
    </Card>
  );
}

function UpgradeSteps({ record }: { record: PairUpgrade }) {
  return (
    <>
      <Table verticalSpacing={4} mt="sm" data-testid="pair-upgrade-steps">
        <Table.Tbody>
          {record.steps.map((step) => (
            <Table.Tr key={step.name} data-step={step.name} data-state={step.state}>
              <Table.Td w={24}>
                <StepIcon state={step.state} />
              </Table.Td>
              <Table.Td>
                <Text size="sm" fw={step.state === 'running' ? 600 : undefined}>
                  {STEP_LABEL[step.name](record)}
                </Text>
                {step.detail && (
                  <Text size="xs" c={step.state === 'failed' ? 'red' : 'dimmed'}>
                    {step.detail}
                  </Text>
                )}
              </Table.Td>
              <Table.Td ta="right">
                <Text size="xs" c="dimmed">
                  {step.ended_at ? dateTime(step.ended_at) : step.started_at ? `since ${dateTime(step.started_at)}` : ''}
                </Text>
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      {record.message && (
        <Text size="sm" mt="xs" c={record.state === 'failed' ? 'red' : record.state === 'stopped' ? 'orange' : undefined}>
          {record.message}
        </Text>
      )}
    </>
  );
}
