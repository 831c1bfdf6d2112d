import { Badge, Group, Stack, Text, Tooltip } from '@mantine/core';
import { IconAlertTriangle } from '@tabler/icons-react';
import type { BackendIssue, BackendState, RevisionState, ServiceStats } from '../client/types.gen';

const BACKEND_STATE: Record<BackendState, { color: string; label: string; help: string }> = {
  up: { color: 'green', label: 'up', help: 'Passing health checks and receiving traffic' },
  down: { color: 'red', label: 'down', help: 'Its health check fails: no new connections' },
  drained: { color: 'yellow', label: 'drained', help: 'Weight 0: existing connections finish, no new ones arrive' },
  disabled: { color: 'gray', label: 'disabled', help: 'In maintenance: taken out of the load balancer' },
  unknown: { color: 'gray', label: 'unknown', help: 'No data plane to ask' },
};

export function BackendStateBadge({ state }: { state: BackendState }) {
  const info = BACKEND_STATE[state];
  return (
    <Tooltip label={info.help}>
      <Badge color={info.color} variant={state === 'down' ? 'filled' : 'light'} style={{ flexShrink: 0, overflow: 'visible' }}>
        {info.label}
      </Badge>
    </Tooltip>
  );
}

/**
 * Problems a health check cannot see (the API's VIP guard): the backend answers its checks, yet
 * the traffic IPVS sends it is lost. Shown in full: at 2 a.m. nobody hovers over a tooltip.
 */
export function BackendWarnings({ warnings }: { warnings: BackendIssue[] }) {
  if (!warnings.length) return null;
  return (
    <Stack gap={2} mt={4} maw={360}>
      {warnings.map((w) => (
        <Group key={w.code} gap={4} wrap="nowrap" align="flex-start" data-warning={w.code}>
          <IconAlertTriangle size={14} color="var(--mantine-color-red-filled)" style={{ flexShrink: 0, marginTop: 2 }} aria-label="Warning" />
          <Text size="xs" c="red">
            {w.message.charAt(0).toUpperCase() + w.message.slice(1)}
          </Text>
        </Group>
      ))}
    </Stack>
  );
}

/** "2/3 up" for a service: red when none, yellow when some are out. */
export function HealthBadge({ stats, ipvs }: { stats: ServiceStats | undefined; ipvs: boolean }) {
  if (!stats) {
    return (
      <Tooltip label="Not in the running revision: apply pending changes first">
        <Badge color="gray" variant="outline">not applied</Badge>
      </Tooltip>
    );
  }
  if (!ipvs) {
    return (
      <Tooltip label="The data plane is unavailable: health is unknown">
        <Badge color="gray" variant="light">? / {stats.backends_total}</Badge>
      </Tooltip>
    );
  }
  const { backends_up: up, backends_total: total } = stats;
  const color = total === 0 || up === 0 ? 'red' : up < total ? 'yellow' : 'green';
  return (
    <Badge color={color} variant={color === 'red' ? 'filled' : 'light'}>
      {up}/{total} up
    </Badge>
  );
}

const REVISION_STATE: Record<RevisionState, { color: string; help: string }> = {
  applied: { color: 'green', help: 'The kernel runs it' },
  validated: { color: 'yellow', help: 'Valid, but this machine has no data plane to apply it to' },
  awaiting_confirm: { color: 'orange', help: 'Applied; rolls back unless confirmed' },
  failed: { color: 'red', help: 'Applying failed; the previous configuration was restored' },
  reverted: { color: 'gray', help: 'Rolled back: not confirmed in time' },
};

export function RevisionStateBadge({ state }: { state: RevisionState }) {
  return (
    <Tooltip label={REVISION_STATE[state].help}>
      <Badge color={REVISION_STATE[state].color} variant="light">
        {state.replace('_', ' ')}
      </Badge>
    </Tooltip>
  );
}
