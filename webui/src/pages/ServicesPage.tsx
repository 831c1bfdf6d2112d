import { Anchor, Badge, Button, Card, Group, SegmentedControl, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconPlus, IconSearch } from '@tabler/icons-react';
import { useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { servicesQuery } from '../api/queries/services';
import { currentStatsQuery } from '../api/queries/telemetry';
import { useCan } from '../auth/useCurrentUser';
import type { ServiceRead, ServiceStats } from '../client/types.gen';
import { HealthBadge } from '../components/StateBadges';
import { endpoint } from '../lib/format';
import { schedulerInfo } from '../lib/schedulers';

type HealthFilter = 'all' | 'problems' | 'unapplied';

function matchesHealth(filter: HealthFilter, stats: ServiceStats | undefined, ipvs: boolean): boolean {
  if (filter === 'all') return true;
  if (filter === 'unapplied') return !stats;
  return !!stats && ipvs && stats.backends_up < stats.backends_total;
}

function matchesText(service: ServiceRead, text: string): boolean {
  const needle = text.trim().toLowerCase();
  if (!needle) return true;
  const haystack = [service.name, service.description ?? '', service.address, ...service.ports.map(String), ...service.backends.map((b) => b.address)];
  return haystack.some((s) => s.toLowerCase().includes(needle));
}

export default function ServicesPage() {
  const services = useQuery(servicesQuery());
  const stats = useQuery(currentStatsQuery());
  const canEdit = useCan('editServices');
  const [params, setParams] = useSearchParams();
  const text = params.get('q') ?? '';
  const health = (params.get('health') as HealthFilter) ?? 'all';
  const protocol = params.get('protocol');
  const setParam = (key: string, value: string | null) => {
    const next = new URLSearchParams(params);
    if (value) next.set(key, value);
    else next.delete(key);
    setParams(next, { replace: true });
  };
  const ipvs = stats.data?.ipvs_available ?? false;
  const statsByName = new Map(stats.data?.services.map((s) => [s.name, s]));
  const shown = (services.data?.data ?? []).filter(
    (s) => matchesText(s, text) && (!protocol || s.protocol === protocol) && matchesHealth(health, statsByName.get(s.name), ipvs),
  );

  return (
    <Stack>
      <Group justify="space-between">
        <Title order={2}>Services</Title>
        {canEdit && (
          <Button component={Link} to="/services/new" leftSection={<IconPlus size={16} />}>
            New service
          </Button>
        )}
      </Group>
      <Group gap="sm" wrap="wrap">
        <TextInput
          placeholder="Search name, address, port, backend"
          leftSection={<IconSearch size={16} />}
          value={text}
          onChange={(e) => setParam('q', e.currentTarget.value)}
          w={300}
          maw="100%"
          aria-label="Search services"
        />
        <SegmentedControl
          value={health}
          onChange={(v) => setParam('health', v === 'all' ? null : v)}
          data={[
            { value: 'all', label: 'All' },
            { value: 'problems', label: 'With problems' },
            { value: 'unapplied', label: 'Not applied' },
          ]}
          aria-label="Health filter"
        />
        <Select
          placeholder="Any protocol"
          data={['tcp', 'udp', 'sctp']}
          value={protocol}
          onChange={(v) => setParam('protocol', v)}
          clearable
          w={140}
          aria-label="Protocol filter"
        />
      </Group>
      <Card withBorder padding={0}>
        <Table.ScrollContainer minWidth={700}>
          <Table highlightOnHover verticalSpacing="xs">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Name</Table.Th>
                <Table.Th>Virtual address</Table.Th>
                <Table.Th>Health</Table.Th>
                <Table.Th>Backends</Table.Th>
                <Table.Th>Scheduler</Table.Th>
                <Table.Th>Forwarding</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {shown.map((service) => (
                <Table.Tr key={service.id}>
                  <Table.Td>
                    <Anchor component={Link} to={`/services/${service.id}`} fw={500}>
                      {service.name}
                    </Anchor>
                    {service.enabled === false && <Badge ml="xs" size="xs" color="gray">disabled</Badge>}
                    {service.description && (
                      <Text size="xs" c="dimmed" lineClamp={1}>
                        {service.description}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td className="mono" style={{ whiteSpace: 'nowrap' }}>
                    {endpoint(service.address, null)}:{service.ports.join(',')}/{service.protocol}
                  </Table.Td>
                  <Table.Td>
                    <HealthBadge stats={statsByName.get(service.name)} ipvs={ipvs} />
                  </Table.Td>
                  <Table.Td className="num">{service.backends.length}</Table.Td>
                  <Table.Td>{schedulerInfo(service.scheduler).name}</Table.Td>
                  <Table.Td tt="uppercase">{service.one_arm ? 'one-arm nat' : service.forwarding}</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {services.data && shown.length === 0 && (
          <Text c="dimmed" ta="center" p="md">
            {services.data.count === 0 ? 'No services yet.' : 'No service matches these filters.'}
          </Text>
        )}
      </Card>
    </Stack>
  );
}
