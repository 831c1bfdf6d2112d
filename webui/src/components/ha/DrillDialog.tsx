import { Alert, Badge, Button, Group, List, Loader, Modal, Stack, Text } from '@mantine/core';
import { useEffect, useState } from 'react';
import { ApiError, errorMessage } from '../../api/errors';
import type { DrillResult, GroupState, HaStatus } from '../../client/types.gen';

/**
 * The failover drill, in one dialog that stays open from the question to the answer: asked
 * first, then its progress while the API runs it (one request: seconds, over 30 s when the
 * takeover and the hand-back both time out), then the measured result or the API's refusal,
 * until the operator closes it.
 */
export type DrillRun =
  | { phase: 'confirm' }
  | { phase: 'running'; startedAt: number }
  | { phase: 'done'; result: DrillResult }
  | { phase: 'refused'; title: string; reason: string };

/** The dialog's phase from the drill mutation's state. */
export function drillRun(mutation: { isPending: boolean; submittedAt: number; data?: DrillResult; error: Error | null }): DrillRun {
  if (mutation.isPending) return { phase: 'running', startedAt: mutation.submittedAt };
  if (mutation.data) return { phase: 'done', result: mutation.data };
  if (mutation.error) {
    const refused = mutation.error instanceof ApiError && mutation.error.status === 409;
    return { phase: 'refused', title: refused ? 'The drill did not run' : 'The drill failed', reason: errorMessage(mutation.error) };
  }
  return { phase: 'confirm' };
}

type Props = { run: DrillRun; status: HaStatus; onRun: () => void; onClose: () => void };

export function DrillDialog({ run, status, onRun, onClose }: Props) {
  const running = run.phase === 'running';
  return (
    <Modal
      opened
      onClose={onClose}
      title="Failover drill"
      size="lg"
      // Closing would not stop the drill: the dialog stays until its result is shown.
      withCloseButton={!running}
      closeOnClickOutside={!running}
      closeOnEscape={!running}
      data-testid="drill-dialog"
    >
      {run.phase === 'confirm' && <Question status={status} onRun={onRun} onClose={onClose} />}
      {run.phase === 'running' && <Progress status={status} startedAt={run.startedAt} />}
      {run.phase === 'done' && <Outcome result={run.result} status={status} onClose={onClose} />}
      {run.phase === 'refused' && <Refusal title={run.title} reason={run.reason} onClose={onClose} />}
    </Modal>
  );
}

function Question({ status, onRun, onClose }: { status: HaStatus; onRun: () => void; onClose: () => void }) {
  const { node, peer } = status;
  return (
    <Stack>
      <Text size="sm">
        {node.name} steps down while every service VIP is probed 20 times a second; the drill times how long {peer?.name ?? 'the peer'} takes
        to hold the VIPs, then ends {node.name}’s maintenance. Traffic really moves: run it when a short interruption is acceptable.
      </Text>
      <Group justify="flex-end">
        <Button variant="default" onClick={onClose}>
          Cancel
        </Button>
        <Button color="orange" onClick={onRun}>
          Run the drill
        </Button>
      </Group>
    </Stack>
  );
}

function useElapsedSeconds(startedAt: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  return Math.max(0, Math.floor((now - startedAt) / 1000));
}

/** While the request runs: the steps, and both nodes' VRRP groups as /ha/status reports them. */
function Progress({ status, startedAt }: { status: HaStatus; startedAt: number }) {
  const elapsed = useElapsedSeconds(startedAt);
  const { node, peer } = status;
  const peerName = peer?.name ?? 'the peer';
  return (
    <Stack data-testid="drill-progress">
      <Group gap="sm">
        <Loader size="sm" />
        <Text fw={600}>Drill running… {elapsed} s</Text>
      </Group>
      <List size="sm" spacing={4}>
        <List.Item>The service VIPs are probed from {node.name}, then {node.name} steps down (maintenance).</List.Item>
        <List.Item>The drill waits up to 15 s for {peerName} to hold every VIP group.</List.Item>
        <List.Item>Then {node.name} leaves maintenance and the hand-back is timed.</List.Item>
      </List>
      <GroupsNow name={node.name} groups={node.groups} />
      {peer && <GroupsNow name={peer.name} groups={peer.groups} />}
      <Text size="xs" c="dimmed">This page may be slow to refresh while the VIPs move.</Text>
    </Stack>
  );
}

function GroupsNow({ name, groups }: { name: string; groups: GroupState[] }) {
  return (
    <Group gap="xs">
      <Text size="sm" w={80} fw={500}>
        {name}
      </Text>
      {groups.length ? (
        groups.map((g) => (
          <Badge key={g.name} size="sm" variant="outline" color={g.state === 'MASTER' ? 'green' : g.state === 'BACKUP' ? 'blue' : 'red'}>
            {g.name} {g.state}
          </Badge>
        ))
      ) : (
        <Text size="xs" c="dimmed">
          no VIP groups reported
        </Text>
      )}
    </Group>
  );
}

function measured(value: number | null, unit = ''): string {
  return value === null ? 'not measured' : `${value}${unit}`;
}

/** The drill's numbers as the API measured them; what it could not measure is said so. */
function Outcome({ result, status, onClose }: { result: DrillResult; status: HaStatus; onClose: () => void }) {
  const { node, peer } = status;
  const peerName = peer?.name ?? 'the peer';
  const tookOver = result.handover_ms !== null;
  const color = !tookOver || result.handback_ms === null ? 'red' : result.probe_failed ? 'yellow' : 'green';
  return (
    <Stack>
      <Alert color={color} title={tookOver ? `${peerName} took over in ${result.handover_ms} ms` : `${peerName} did not take over every VIP group`} data-testid="drill-result">
        <Stack gap={4}>
          <Text size="sm" data-testid="drill-handover">
            {tookOver
              ? `Time until ${peerName} held every VIP group: ${result.handover_ms} ms.`
              : `${peerName} did not report MASTER of every VIP group within 15 s.`}
          </Text>
          <Text size="sm" data-testid="drill-probe">
            Requests probed: {result.probe_total}, failed: {result.probe_failed}
            {result.probe_targets.length ? ` (connects to ${result.probe_targets.join(', ')})` : ''}.
          </Text>
          <Text size="sm" data-testid="drill-connections">
            Connection-sync entries: {measured(result.connections_before)} on {node.name} before, {measured(result.peer_connections_after)} on {peerName} after.
          </Text>
          <Text size="sm" data-testid="drill-handback">
            Hand-back:{' '}
            {result.handback_ms === null
              ? `${node.name} left maintenance but did not report BACKUP or MASTER within 15 s.`
              : `${node.name} left maintenance and was ready again after ${result.handback_ms} ms.`}{' '}
            {result.active_after ? `${result.active_after} holds the VIPs now.` : 'Neither node holds every VIP group now.'}
          </Text>
          {result.message && (
            <Text size="xs" c="dimmed" data-testid="drill-notes">
              Note: {result.message}.
            </Text>
          )}
        </Stack>
      </Alert>
      <Group justify="flex-end">
        <Button onClick={onClose}>Close</Button>
      </Group>
    </Stack>
  );
}

/** The API's refusal (409: the drill did not start) or failure, in its own words. */
function Refusal({ title, reason, onClose }: { title: string; reason: string; onClose: () => void }) {
  return (
    <Stack>
      <Alert color="red" title={title} data-testid="drill-refusal">
        {reason}
      </Alert>
      <Group justify="flex-end">
        <Button onClick={onClose}>Close</Button>
      </Group>
    </Stack>
  );
}
