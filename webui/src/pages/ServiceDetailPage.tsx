import { ActionIcon, Alert, Anchor, Badge, Button, Card, Group, Menu, NumberInput, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { modals } from '@mantine/modals';
import { notifications } from '@mantine/notifications';
import { IconDots, IconEdit, IconPlus, IconTrash } from '@tabler/icons-react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { errorMessage } from '../api/errors';
import { deleteBackendMutation, deleteServiceMutation, serviceQuery, updateBackendMutation } from '../api/queries/services';
import { currentStatsQuery, eventsQuery } from '../api/queries/telemetry';
import { useCan } from '../auth/useCurrentUser';
import type { BackendRead, BackendStats, EventRead, ServiceRead } from '../client/types.gen';
import { LiveCharts } from '../components/LiveCharts';
import { PageLoader } from '../components/PageLoader';
import { BackendStateBadge, BackendWarnings, HealthBadge } from '../components/StateBadges';
import { BackendModal } from '../forms/BackendModal';
import { bitsPerSecond, compact, endpoint, relativeTime } from '../lib/format';
import { FORWARDING, schedulerInfo } from '../lib/schedulers';
import { validWeight } from '../lib/validation';

export default function ServiceDetailPage() {
  const id = Number(useParams().id);
  const service = useQuery(serviceQuery(id));
  if (service.error) return <Alert color="red">{errorMessage(service.error)}</Alert>;
  if (!service.data) return <PageLoader />;
  return <ServiceDetail service={service.data} />;
}

function ServiceDetail({ service }: { service: ServiceRead }) {
  const stats = useQuery(currentStatsQuery());
  const events = useQuery(eventsQuery({ service: service.name, limit: 50 }));
  const canEdit = useCan('editServices');
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const remove = useMutation(deleteServiceMutation(queryClient));
  const [editing, setEditing] = useState<BackendRead | 'new' | null>(null);
  const ipvs = stats.data?.ipvs_available ?? false;
  const serviceStats = stats.data?.services.find((s) => s.name === service.name);
  const port = service.ports.length === 1 ? service.ports[0] : null;
  const statsFor = (b: BackendRead) =>
    serviceStats?.backends.find((s) => s.address === b.address && (s.port ?? null) === (b.port ?? port));
  const forwarding = FORWARDING.find((f) => f.value === (service.one_arm ? 'one_arm' : service.forwarding));

  const confirmDelete = () =>
    modals.openConfirmModal({
      title: `Delete service ${service.name}?`,
      children: <Text size="sm">Its VIP stops answering once you apply this change. You can still discard it before applying.</Text>,
      labels: { confirm: 'Delete', cancel: 'Cancel' },
      confirmProps: { color: 'red' },
      onConfirm: () =>
        remove.mutate(service.id, {
          onSuccess: () => void navigate('/services'),
          onError: (error) => notifications.show({ color: 'red', title: `Could not delete ${service.name}`, message: errorMessage(error) }),
        }),
    });

  return (
    <Stack>
      <Group justify="space-between" wrap="wrap">
        <div>
          <Group gap="xs">
            <Title order={2}>{service.name}</Title>
            <HealthBadge stats={serviceStats} ipvs={ipvs} />
            {service.enabled === false && <Badge color="gray">disabled</Badge>}
          </Group>
          <Text className="mono" size="sm">
            {endpoint(service.address, null)}:{service.ports.join(',')}/{service.protocol}
          </Text>
          <Text size="sm" c="dimmed">
            {schedulerInfo(service.scheduler).name} · {forwarding?.name}
            {service.persistence_timeout ? ` · sticky for ${service.persistence_timeout} s` : ''}
            {service.description ? ` · ${service.description}` : ''}
          </Text>
        </div>
        {canEdit && (
          <Group gap="xs">
            <Button variant="default" component={Link} to={`/services/${service.id}/edit`} leftSection={<IconEdit size={16} />}>
              Edit settings
            </Button>
            <Button variant="subtle" color="red" onClick={confirmDelete} leftSection={<IconTrash size={16} />}>
              Delete
            </Button>
          </Group>
        )}
      </Group>

      <Card withBorder padding={0}>
        <Group justify="space-between" p="sm">
          <Title order={4}>Backends</Title>
          {canEdit && (
            <Button size="xs" variant="light" leftSection={<IconPlus size={14} />} onClick={() => setEditing('new')}>
              Add backend
            </Button>
          )}
        </Group>
        <Table.ScrollContainer minWidth={1000}>
          <Table verticalSpacing="xs" highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Backend</Table.Th>
                <Table.Th miw={210}>State</Table.Th>
                <Table.Th>Weight</Table.Th>
                <Table.Th ta="right">Active</Table.Th>
                <Table.Th ta="right">Inactive</Table.Th>
                <Table.Th ta="right">Conn/s</Table.Th>
                <Table.Th ta="right">In / out</Table.Th>
                <Table.Th>Last health event</Table.Th>
                {canEdit && <Table.Th aria-label="Actions" />}
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {service.backends.map((backend) => (
                <BackendRow
                  key={backend.id}
                  service={service}
                  backend={backend}
                  stats={statsFor(backend)}
                  lastEvent={events.data?.data.find((e) => e.backend === endpoint(backend.address, backend.port ?? port))}
                  canEdit={canEdit}
                  onEdit={() => setEditing(backend)}
                />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {service.backends.length === 0 && (
          <Text c="dimmed" ta="center" p="md">
            No backends: this service cannot answer.
          </Text>
        )}
      </Card>

      <LiveCharts service={service.name} backends={serviceStats?.backends.map((b) => b.endpoint) ?? []} ipvs={ipvs} />

      {editing && (
        <BackendModal serviceId={service.id} serviceAddress={service.address} backend={editing === 'new' ? null : editing} onClose={() => setEditing(null)} />
      )}
    </Stack>
  );
}

type RowProps = {
  service: ServiceRead;
  backend: BackendRead;
  stats: BackendStats | undefined;
  lastEvent: EventRead | undefined;
  canEdit: boolean;
  onEdit: () => void;
};

function BackendRow({ service, backend, stats, lastEvent, canEdit, onEdit }: RowProps) {
  const queryClient = useQueryClient();
  const update = useMutation(updateBackendMutation(queryClient, service.id));
  const remove = useMutation(deleteBackendMutation(queryClient, service.id));
  const weight = backend.weight ?? 1;
  const enabled = backend.enabled ?? true;
  const counters = stats?.counters;
  const name = endpoint(backend.address, backend.port ?? (service.ports.length === 1 ? service.ports[0] : null));
  // The candidate differs from what runs: say what will happen once applied.
  const pending = stats
    ? stats.configured_weight !== weight || (stats.state === 'disabled') === enabled
    : true;
  const change = (label: string, body: { weight?: number; enabled?: boolean }) =>
    update.mutate(
      { backendId: backend.id, change: body },
      {
        onSuccess: () => notifications.show({ message: `${label} ${name}: pending until applied.` }),
        onError: (error) => notifications.show({ color: 'red', title: `Could not ${label.toLowerCase()} ${name}`, message: errorMessage(error) }),
      },
    );
  const confirmRemove = () =>
    modals.openConfirmModal({
      title: `Remove backend ${name}?`,
      children: <Text size="sm">After applying, its connections are cut. To stop new connections gently, drain it instead.</Text>,
      labels: { confirm: 'Remove', cancel: 'Cancel' },
      confirmProps: { color: 'red' },
      onConfirm: () =>
        remove.mutate(backend.id, {
          onError: (error) => notifications.show({ color: 'red', title: `Could not remove ${name}`, message: errorMessage(error) }),
        }),
    });

  return (
    <Table.Tr data-testid={`backend-${backend.address}`}>
      <Table.Td>
        <Text className="mono" size="sm">
          {name}
        </Text>
        {backend.description && (
          <Text size="xs" c="dimmed">
            {backend.description}
          </Text>
        )}
      </Table.Td>
      <Table.Td>
        <Group gap={4} wrap="wrap">
          {stats ? <BackendStateBadge state={stats.state} /> : <Badge color="gray" variant="outline">not applied</Badge>}
          {pending && stats && (
            <Tooltip label="Changed in the candidate configuration: applies with the pending changes">
              <Badge color="yellow" variant="outline" style={{ flexShrink: 0, overflow: 'visible' }}>
                {!enabled ? 'disable pending' : weight === 0 ? 'drain pending' : 'change pending'}
              </Badge>
            </Tooltip>
          )}
        </Group>
        <BackendWarnings warnings={stats?.warnings ?? []} />
      </Table.Td>
      <Table.Td>
        {canEdit ? <WeightEditor weight={weight} onSave={(w) => change('Weight set for', { weight: w })} label={`Weight of ${name}`} /> : <span className="num">{weight}</span>}
      </Table.Td>
      <Table.Td ta="right" className="num">{compact(counters?.activeconns)}</Table.Td>
      <Table.Td ta="right" className="num">{compact(counters?.inactconns)}</Table.Td>
      <Table.Td ta="right" className="num">{compact(counters?.cps)}</Table.Td>
      <Table.Td ta="right" className="num" style={{ whiteSpace: 'nowrap' }}>
        {counters ? `${bitsPerSecond(counters.inbps)} / ${bitsPerSecond(counters.outbps)}` : '—'}
      </Table.Td>
      <Table.Td>
        {lastEvent ? (
          <Tooltip label={lastEvent.message}>
            <Text size="xs" c={lastEvent.severity === 'info' ? undefined : 'red'}>
              {lastEvent.kind} · {relativeTime(lastEvent.at)}
            </Text>
          </Tooltip>
        ) : (
          <Text size="xs" c="dimmed">none recorded</Text>
        )}
      </Table.Td>
      {canEdit && (
        <Table.Td>
          <Group gap={4} wrap="nowrap" justify="flex-end">
            {weight > 0 && enabled && (
              <Tooltip label="Weight 0: existing connections finish, no new ones arrive">
                <Button size="compact-xs" variant="light" color="yellow" onClick={() => change('Draining', { weight: 0 })}>
                  Drain
                </Button>
              </Tooltip>
            )}
            {weight === 0 && enabled && (
              <Tooltip label="Give it weight 1 again (adjust the weight afterwards if needed)">
                <Button size="compact-xs" variant="light" color="green" onClick={() => change('Resuming', { weight: 1 })}>
                  Resume
                </Button>
              </Tooltip>
            )}
            {enabled ? (
              <Tooltip label="Maintenance: take it out of the load balancer (its connections are cut)">
                <Button size="compact-xs" variant="light" color="gray" onClick={() => change('Disabling', { enabled: false })}>
                  Disable
                </Button>
              </Tooltip>
            ) : (
              <Button size="compact-xs" variant="light" color="green" onClick={() => change('Enabling', { enabled: true })}>
                Enable
              </Button>
            )}
            <Menu position="bottom-end" withinPortal>
              <Menu.Target>
                <ActionIcon variant="subtle" aria-label={`More actions for ${name}`}>
                  <IconDots size={16} />
                </ActionIcon>
              </Menu.Target>
              <Menu.Dropdown>
                <Menu.Item leftSection={<IconEdit size={14} />} onClick={onEdit}>
                  Edit all settings
                </Menu.Item>
                <Menu.Item color="red" leftSection={<IconTrash size={14} />} onClick={confirmRemove}>
                  Remove
                </Menu.Item>
              </Menu.Dropdown>
            </Menu>
          </Group>
        </Table.Td>
      )}
    </Table.Tr>
  );
}

/** Click the weight to change it; Enter saves, Escape cancels. */
function WeightEditor({ weight, onSave, label }: { weight: number; onSave: (weight: number) => void; label: string }) {
  const [draft, setDraft] = useState<number | string | null>(null);
  if (draft === null) {
    return (
      <Anchor component="button" type="button" className="num" onClick={() => setDraft(weight)} aria-label={`${label}: ${weight}, click to change`}>
        {weight}
      </Anchor>
    );
  }
  const error = validWeight(draft);
  // Read the input itself: a key press can arrive before React has applied the last keystroke.
  const save = (text: string) => {
    const value = text.trim() === '' ? '' : Number(text);
    if (validWeight(value)) return;
    if (Number(value) !== weight) onSave(Number(value));
    setDraft(null);
  };
  return (
    <NumberInput
      size="xs"
      w={90}
      min={0}
      max={65535}
      autoFocus
      aria-label={label}
      value={draft}
      error={error}
      onChange={setDraft}
      onBlur={(e) => save(e.currentTarget.value)}
      onKeyDown={(e) => {
        if (e.key === 'Enter') save(e.currentTarget.value);
        if (e.key === 'Escape') setDraft(null);
      }}
    />
  );
}
