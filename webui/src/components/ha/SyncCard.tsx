import { Alert, Button, Card, Group, Stack, Text, Title } from '@mantine/core';
import { modals } from '@mantine/modals';
import { notifications } from '@mantine/notifications';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../../api/errors';
import { haDiffQuery, resolveMutation, syncNowMutation } from '../../api/queries/ha';
import { useCan } from '../../auth/useCurrentUser';
import type { HaStatus, SyncResult } from '../../client/types.gen';
import { syncSummary } from '../../lib/ha';
import { DiffView } from '../DiffView';

const shortHash = (hash: string | null) => (hash ? hash.slice(0, 10) : '—');

/** Is the peer running this node's shared configuration? And on a conflict: which side wins. */
export function SyncCard({ status }: { status: HaStatus }) {
  const summary = syncSummary(status);
  const { sync, peer, node } = status;
  const canSync = useCan('operateHa');
  const canResolve = useCan('editHa');
  const queryClient = useQueryClient();
  const push = useMutation(syncNowMutation(queryClient));
  const conflict = sync.state === 'conflict';
  const [comparing, setComparing] = useState(false);
  const showDiff = conflict || comparing;
  return (
    <Card withBorder>
      <Title order={4} mb="sm">
        Configuration sync
      </Title>
      <Stack gap="sm">
        <Alert color={summary.tone} title={summary.title} data-testid="sync-state" data-state={sync.state}>
          {summary.detail}
        </Alert>
        {peer && (
          <Text size="xs" c="dimmed" className="mono">
            {node.name}: {sync.local_revision === null ? 'no revision' : `revision ${sync.local_revision}`} · {shortHash(sync.local_hash)}
            {'  '}|{'  '}
            {peer.name}: {sync.peer_revision === null ? 'no revision' : `revision ${sync.peer_revision}`} · {shortHash(sync.peer_hash)}
          </Text>
        )}
        {peer && (
          <Group gap="xs">
            {canSync && node.writer && !conflict && (
              <Button
                size="xs"
                variant="light"
                loading={push.isPending}
                onClick={() =>
                  push.mutate(undefined, {
                    onSuccess: (result) => notifications.show({ color: tone(result), message: `Sync: ${result.message || result.result.replace('_', ' ')}` }),
                    onError: (error) => notifications.show({ color: 'red', title: 'Sync failed', message: errorMessage(error) }),
                  })
                }
              >
                Sync to {peer.name} now
              </Button>
            )}
            {!conflict && (
              <Button size="xs" variant="default" onClick={() => setComparing((v) => !v)}>
                {comparing ? 'Hide the comparison' : `Compare with ${peer.name}`}
              </Button>
            )}
          </Group>
        )}
        {showDiff && peer && <PeerDiff />}
        {conflict && peer && (canResolve ? <ResolveButtons status={status} /> : <Text size="sm">An administrator chooses which side wins.</Text>)}
      </Stack>
    </Card>
  );
}

function tone(result: SyncResult): string {
  return ['failed', 'conflict'].includes(result.result) ? 'red' : 'green';
}

function PeerDiff() {
  const diff = useQuery(haDiffQuery());
  if (diff.error) return <Alert color="red" title="Could not compare with the peer">{errorMessage(diff.error)}</Alert>;
  if (!diff.data) return <Text size="sm" c="dimmed">Asking the peer…</Text>;
  if (diff.data.in_sync || !diff.data.text.trim()) return <Text size="sm">The shared configuration is the same on both nodes.</Text>;
  return (
    <Stack gap={4}>
      <Text size="xs" c="dimmed">
        Lines with − are only on this node, lines with + only on the peer.
      </Text>
      <div data-testid="ha-diff">
        <DiffView text={diff.data.text} />
      </div>
    </Stack>
  );
}

function ResolveButtons({ status }: { status: HaStatus }) {
  const queryClient = useQueryClient();
  // Told here, not in mutate(): once resolved, the conflict view (this component) goes away.
  const resolve = useMutation({
    ...resolveMutation(queryClient),
    onSuccess: (result: SyncResult) => notifications.show({ color: tone(result), title: 'Conflict resolved', message: result.message || result.result }),
    onError: (error: Error) => notifications.show({ color: 'red', title: 'Not resolved', message: errorMessage(error) }),
  });
  const here = status.node.name;
  const there = status.peer?.name ?? 'the peer';
  const choose = (winner: 'local' | 'peer') =>
    modals.openConfirmModal({
      title: winner === 'local' ? `Keep ${here}’s configuration?` : `Take ${there}’s configuration?`,
      children: (
        <Text size="sm">
          {winner === 'local'
            ? `${there}’s services, VIP groups, firewall and user accounts are replaced by ${here}’s and applied there at once.`
            : `${here}’s services, VIP groups, firewall and user accounts are replaced by ${there}’s and applied here at once.`}{' '}
          The losing side’s version stays in its revision history, so it can be looked up later.
        </Text>
      ),
      labels: { confirm: winner === 'local' ? `${here} wins` : `${there} wins`, cancel: 'Cancel' },
      confirmProps: { color: 'red' },
      onConfirm: () => resolve.mutate({ winner }),
    });
  return (
    <Stack gap="xs">
      <Text size="sm" fw={600}>
        Choose which side wins
      </Text>
      <Group gap="xs">
        <Button color="red" variant="light" loading={resolve.isPending} onClick={() => choose('local')}>
          Keep this node’s ({here})
        </Button>
        <Button color="red" variant="light" loading={resolve.isPending} onClick={() => choose('peer')}>
          Take the peer’s ({there})
        </Button>
      </Group>
    </Stack>
  );
}
