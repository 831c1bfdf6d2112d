import { Card, Stack, Text, Timeline, Title } from '@mantine/core';
import type { HaStatus } from '../../client/types.gen';
import { dateTime } from '../../lib/format';

/** Connection sync health (entries on each side) and the VRRP transitions of both nodes. */

export function ConnSyncCard({ status }: { status: HaStatus }) {
  const sync = status.conn_sync;
  return (
    <Card withBorder data-testid="conn-sync">
      <Title order={4} mb="xs">Connection sync</Title>
      {sync.enabled ? (
        <Stack gap={4}>
          <Text size="sm">
            On <span className="mono">{sync.interface}</span>: this node’s sync daemon is{' '}
            <b>{sync.local_daemon === 'master' ? 'sending' : sync.local_daemon === 'backup' ? 'receiving' : 'off'}</b>
            {sync.local_daemon !== 'off' && ` (${sync.local_daemon})`}.
          </Text>
          <Text size="sm">
            Connection entries: <b className="num">{sync.local_connections ?? '—'}</b> here,{' '}
            <b className="num">{sync.peer_connections ?? '—'}</b> on the peer.
          </Text>
          <Text size="xs" c="dimmed">The standby holds copies of the active node’s connections, so they survive a failover.</Text>
        </Stack>
      ) : (
        <Text size="sm" c="dimmed">
          Off: on a failover, established connections are cut. Set a connection sync interface in this node’s settings
          below (on both nodes).
          {sync.local_connections !== null && ` Connection entries here: ${sync.local_connections}.`}
        </Text>
      )}
    </Card>
  );
}

export function TransitionsCard({ status }: { status: HaStatus }) {
  const list = status.transitions;
  return (
    <Card withBorder>
      <Title order={4} mb="sm">Role changes</Title>
      {list.length ? (
        <Timeline bulletSize={14} lineWidth={2} data-testid="transitions">
          {list.map((t, i) => (
            <Timeline.Item
              key={`${t.time}-${t.node}-${t.group}-${i}`}
              color={t.to === 'MASTER' ? 'green' : t.to === 'FAULT' ? 'red' : 'blue'}
              title={`${t.node} · ${t.group}: ${t.from ?? '—'} → ${t.to}`}
            >
              <Text size="xs" c="dimmed">
                {dateTime(t.time)}
                {t.reason ? ` · ${t.reason}` : ''}
              </Text>
            </Timeline.Item>
          ))}
        </Timeline>
      ) : (
        <Text size="sm" c="dimmed">No VRRP transitions recorded.</Text>
      )}
    </Card>
  );
}
