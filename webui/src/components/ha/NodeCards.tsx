import { Alert, Badge, Card, Divider, Group, Stack, Text, Tooltip } from '@mantine/core';
import type { GroupState, HaStatus } from '../../client/types.gen';
import { dateTime, relativeTime } from '../../lib/format';
import { CLOCK_ALARM_SECONDS, clockText, peerVersion, ROLE, roleIsAlarm, shortFingerprint, type Role as HaRole } from '../../lib/ha';
import { HandOverActions } from './HandOverActions';

/** The two nodes of the pair side by side: role, who takes changes, VRRP groups, reachability. */

function RoleBadge({ role }: { role: HaRole | null }) {
  const info = ROLE[role ?? 'unknown'];
  return (
    <Tooltip label={role ? info.help : 'Not reported yet'}>
      <Badge color={info.color} variant={role === 'active' || roleIsAlarm(role) ? 'filled' : 'light'} size="lg" data-testid="role">
        {info.label}
      </Badge>
    </Tooltip>
  );
}

/** The one-writer rule: the shared configuration is edited on one node of the pair. */
function WriterBadge({ writer, where }: { writer: boolean; where: 'here' | 'there' }) {
  return (
    <Badge variant="dot" color={writer ? 'green' : 'gray'} mt={6} style={{ textTransform: 'none' }}>
      {writer ? `changes are made ${where}` : 'read-only copy'}
    </Badge>
  );
}

function Groups({ groups }: { groups: GroupState[] }) {
  if (!groups.length) return <Text size="xs" c="dimmed">No VIP groups reported.</Text>;
  return (
    <Stack gap={2}>
      {groups.map((g) => (
        <Group key={g.name} gap="xs" wrap="nowrap">
          <Text size="sm" className="mono">{g.name}</Text>
          <Badge size="sm" variant="outline" color={g.state === 'MASTER' ? 'green' : g.state === 'BACKUP' ? 'blue' : g.state === 'FAULT' ? 'red' : 'gray'}>
            {g.state}
          </Badge>
          {g.since && <Text size="xs" c="dimmed">since {relativeTime(g.since)}</Text>}
        </Group>
      ))}
    </Stack>
  );
}

export function ThisNodeCard({ status }: { status: HaStatus }) {
  const { node, peer } = status;
  return (
    <Card withBorder data-testid="this-node">
      <Group justify="space-between" wrap="nowrap" align="flex-start">
        <div>
          <Text size="xs" c="dimmed" tt="uppercase" fw={600}>This node</Text>
          <Text fw={700} size="lg">{node.name}</Text>
          <Text size="xs" c="dimmed">VRRP priority {node.priority}</Text>
          <Text size="xs" c="dimmed" data-testid="node-version">Fulcrum {node.software_version}</Text>
        </div>
        <RoleBadge role={node.role} />
      </Group>
      {peer && <WriterBadge writer={node.writer} where="here" />}
      <Divider my="sm" />
      <Groups groups={node.groups} />
      <HandOverActions status={status} />
    </Card>
  );
}

export function PeerCard({ status }: { status: HaStatus }) {
  const peer = status.peer;
  // Right after pairing the watcher has not polled the peer yet: neither reachable nor not.
  const version = peerVersion(status);
  const reachability = !peer ? null : peer.reachable ? 'reachable' : peer.unreachable_since || peer.last_seen ? 'unreachable' : 'not_asked';
  if (!peer) {
    return (
      <Card withBorder data-testid="peer-node">
        <Text size="xs" c="dimmed" tt="uppercase" fw={600}>Peer</Text>
        <Text fw={600} mt={4}>No peer</Text>
        <Text size="sm" c="dimmed">
          {status.cluster === 'writer'
            ? 'This node leads a cluster: its members announce the same VIPs and take every commit made here (see the Cluster card below).'
            : 'This node runs alone: if it fails, its services stop. Pair it with a second node below.'}
        </Text>
      </Card>
    );
  }
  return (
    <Card withBorder data-testid="peer-node">
      <Group justify="space-between" wrap="nowrap" align="flex-start">
        <div style={{ minWidth: 0 }}>
          <Text size="xs" c="dimmed" tt="uppercase" fw={600}>Peer</Text>
          <Text fw={700} size="lg">{peer.name}</Text>
          <Text size="xs" c="dimmed" className="mono" truncate>{peer.url}</Text>
        </div>
        <RoleBadge role={peer.role} />
      </Group>
      {peer.writer !== null && <WriterBadge writer={peer.writer} where="there" />}
      <Group gap="xs" mt="xs" data-testid="peer-reachability" data-reachable={reachability}>
        <Badge color={reachability === 'reachable' ? 'green' : reachability === 'unreachable' ? 'red' : 'gray'} variant={reachability === 'unreachable' ? 'filled' : 'light'}>
          {reachability === 'not_asked' ? 'not asked yet' : reachability}
        </Badge>
        <Text size="xs" c="dimmed">
          {reachability === 'reachable' && peer.last_seen && `last answered ${relativeTime(peer.last_seen)}`}
          {reachability === 'unreachable' && peer.unreachable_since && `since ${dateTime(peer.unreachable_since)}`}
        </Text>
      </Group>
      <Text size="xs" c="dimmed" mt={4}>
        Runs {peer.applied_revision === null ? 'no revision yet' : `revision ${peer.applied_revision}`}
      </Text>
      <Text size="xs" c={version.differs ? 'yellow.8' : 'dimmed'} data-testid="peer-version">
        {version.text}
      </Text>
      <Text size="xs" c={peer.clock_offset !== null && Math.abs(peer.clock_offset) >= CLOCK_ALARM_SECONDS ? 'red' : 'dimmed'} data-testid="peer-clock">
        Clock {clockText(peer.clock_offset)}
      </Text>
      <Tooltip label={peer.certificate ? `SHA-256 ${peer.certificate}` : 'The link is plain HTTP: signed, not encrypted'} multiline maw={360}>
        <Text size="xs" c="dimmed" data-testid="peer-certificate">
          {peer.certificate ? `Certificate pinned: ${shortFingerprint(peer.certificate)}` : 'Plain HTTP: no certificate to pin'}
        </Text>
      </Tooltip>
      {peer.untrusted_certificate && (
        <Alert color="red" mt="xs" p="xs" title="Unknown certificate: refused" data-testid="peer-untrusted">
          <Text size="xs">It presents SHA-256 {shortFingerprint(peer.untrusted_certificate)}, not the pinned certificate.</Text>
        </Alert>
      )}
      <Divider my="sm" />
      <Groups groups={peer.groups} />
    </Card>
  );
}

export function SplitBrainAlert({ status }: { status: HaStatus }) {
  const split = status.split_brain;
  return (
    <Alert color="red" variant="filled" title="Split brain: both nodes hold the same VIPs" data-testid="split-brain">
      Both nodes are MASTER of {split.groups.join(', ')}{split.since ? ` since ${dateTime(split.since)}` : ''}, so clients
      reach either at random. {split.holding ? `${status.node.name} has stepped down (maintenance) to end it.` : 'The node that is not the writer steps down to end it.'}{' '}
      Check the network link between the nodes.
    </Alert>
  );
}
