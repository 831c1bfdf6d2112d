import { Anchor, Badge, Card, Group, Progress, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useRef } from 'react';
import { Link } from 'react-router';
import { errorMessage } from '../api/errors';
import { haStatusQuery } from '../api/queries/ha';
import { servicesQuery } from '../api/queries/services';
import { statusQuery } from '../api/queries/status';
import { storageQuery } from '../api/queries/storage';
import { currentStatsQuery } from '../api/queries/telemetry';
import { useLatestRevision } from '../api/useLatestRevision';
import { useLiveSeries } from '../api/useLiveSeries';
import type { HaStatus, ServiceRead, ServiceStats } from '../client/types.gen';
import { AlarmList } from '../components/AlarmList';
import { HealthBadge, RevisionStateBadge } from '../components/StateBadges';
import { Sparkline } from '../components/Sparkline';
import { computeAlarms } from '../lib/alarms';
import { lastingUnknownRoles, ROLE, syncSummary } from '../lib/ha';
import { bitsPerSecond, byteSize, compact, endpoint } from '../lib/format';

export function OverviewPage() {
  const status = useQuery(statusQuery());
  const stats = useQuery(currentStatsQuery());
  const services = useQuery(servicesQuery());
  const latest = useLatestRevision();
  const ha = useQuery(haStatusQuery());
  const unknownSince = useRef(new Map<string, number>());
  const alarms = computeAlarms(status.data, stats.data, latest, ha.data, lastingUnknownRoles(ha.data, unknownSince.current));
  if (status.error) {
    alarms.unshift({ id: 'status-error', severity: 'critical', title: 'The API cannot report its status', message: errorMessage(status.error) });
  }
  const ipvs = stats.data?.ipvs_available ?? false;
  const statsByName = new Map(stats.data?.services.map((s) => [s.name, s]));

  return (
    <Stack>
      <Title order={2}>Overview</Title>
      <AlarmList alarms={alarms} checking={!status.data && !status.error} />
      <SimpleGrid cols={{ base: 1, sm: 2, lg: 3 }}>
        <NodeCard ha={ha.data} />
        <RevisionCard />
        <TotalsCard stats={stats.data?.services ?? []} ipvs={ipvs} />
        <DiskCard />
      </SimpleGrid>
      <Card withBorder padding={0}>
        <Group justify="space-between" p="sm">
          <Title order={4}>Services</Title>
          <Anchor component={Link} to="/services" size="sm">
            Manage services
          </Anchor>
        </Group>
        <Table.ScrollContainer minWidth={640}>
          <Table verticalSpacing="xs" highlightOnHover>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Service</Table.Th>
                <Table.Th>Address</Table.Th>
                <Table.Th>Health</Table.Th>
                <Table.Th ta="right">Conn/s</Table.Th>
                <Table.Th ta="right">Active</Table.Th>
                <Table.Th ta="right">In / out</Table.Th>
                <Table.Th>Last 5 min</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {services.data?.data.map((service) => (
                <ServiceRow key={service.id} service={service} stats={statsByName.get(service.name)} ipvs={ipvs} />
              ))}
            </Table.Tbody>
          </Table>
        </Table.ScrollContainer>
        {services.data?.count === 0 && (
          <Text c="dimmed" p="md" ta="center">
            No services yet. <Anchor component={Link} to="/services/new">Create the first one</Anchor>.
          </Text>
        )}
      </Card>
    </Stack>
  );
}

function ServiceRow({ service, stats, ipvs }: { service: ServiceRead; stats: ServiceStats | undefined; ipvs: boolean }) {
  const counters = stats?.counters;
  return (
    <Table.Tr>
      <Table.Td>
        <Anchor component={Link} to={`/services/${service.id}`} fw={500}>
          {service.name}
        </Anchor>
        {service.enabled === false && (
          <Badge ml="xs" color="gray" size="xs">
            disabled
          </Badge>
        )}
      </Table.Td>
      <Table.Td className="mono" style={{ whiteSpace: 'nowrap' }}>
        {endpoint(service.address, null)}:{service.ports.join(',')}/{service.protocol}
      </Table.Td>
      <Table.Td>
        <HealthBadge stats={stats} ipvs={ipvs} />
      </Table.Td>
      <Table.Td ta="right" className="num">{compact(counters?.cps)}</Table.Td>
      <Table.Td ta="right" className="num">{compact(counters?.activeconns)}</Table.Td>
      <Table.Td ta="right" className="num" style={{ whiteSpace: 'nowrap' }}>
        {counters ? `${bitsPerSecond(counters.inbps)} / ${bitsPerSecond(counters.outbps)}` : '—'}
      </Table.Td>
      <Table.Td>{stats ? <ServiceSparkline name={service.name} /> : <Text c="dimmed" size="xs">—</Text>}</Table.Td>
    </Table.Tr>
  );
}

function ServiceSparkline({ name }: { name: string }) {
  const { buffer, version } = useLiveSeries(name, null, '5m');
  void version; // re-render on each live sample
  return <Sparkline columns={buffer?.columns() ?? null} metric="cps" label={`${name} connections per second, last 5 minutes`} />;
}

function NodeCard({ ha }: { ha: HaStatus | undefined }) {
  const status = useQuery(statusQuery());
  const sync = ha ? syncSummary(ha) : null;
  return (
    <Card withBorder data-testid="ha-card">
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        High availability
      </Text>
      <Group mt="xs" gap="xs">
        <Text fw={600}>{ha?.node.name ?? status.data?.node ?? '…'}</Text>
        {ha && (
          <Badge color={ROLE[ha.node.role].color} data-testid="ha-card-role">
            {ROLE[ha.node.role].label}
          </Badge>
        )}
        {ha?.peer && (
          <>
            <Text size="sm" c="dimmed">
              peer {ha.peer.name}
            </Text>
            {ha.peer.reachable ? (
              <Badge color={ROLE[ha.peer.role ?? 'unknown'].color} variant="light" data-testid="ha-card-peer-role">
                {ROLE[ha.peer.role ?? 'unknown'].label}
              </Badge>
            ) : (
              <Badge color="red" data-testid="ha-card-peer-role">unreachable</Badge>
            )}
          </>
        )}
      </Group>
      <Text size="sm" c={sync?.tone === 'red' ? 'red' : 'dimmed'} mt={4} data-testid="ha-card-sync">
        {sync ? (ha?.peer ? sync.title : 'Single node: no peer, no failover.') : 'HA state not reported.'}
      </Text>
      <Anchor component={Link} to="/ha" size="sm" mt="xs">
        High availability
      </Anchor>
    </Card>
  );
}

function RevisionCard() {
  const status = useQuery(statusQuery());
  const latest = useLatestRevision();
  return (
    <Card withBorder>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        Configuration
      </Text>
      <Group mt="xs" gap="xs">
        <Text fw={600}>{latest ? `Revision ${latest.number}` : 'Nothing committed yet'}</Text>
        {latest && <RevisionStateBadge state={latest.state} />}
      </Group>
      <Text size="sm" c="dimmed" mt={4}>
        {status.data?.pending_changes ? 'There are changes waiting to be applied.' : 'No pending changes.'}
        {latest?.author && ` Last by ${latest.author}.`}
      </Text>
      <Anchor component={Link} to="/revisions" size="sm" mt="xs">
        Revisions
      </Anchor>
    </Card>
  );
}

function TotalsCard({ stats, ipvs }: { stats: ServiceStats[]; ipvs: boolean }) {
  const sum = (pick: (s: ServiceStats) => number | undefined) => stats.reduce((total, s) => total + (pick(s) ?? 0), 0);
  return (
    <Card withBorder>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        Traffic now
      </Text>
      {ipvs ? (
        <SimpleGrid cols={3} mt="xs">
          <Metric label="conn/s" value={compact(sum((s) => s.counters?.cps))} />
          <Metric label="active" value={compact(sum((s) => s.counters?.activeconns))} />
          <Metric label="in" value={bitsPerSecond(sum((s) => s.counters?.inbps))} />
        </SimpleGrid>
      ) : (
        <Text size="sm" c="dimmed" mt="xs">
          No live counters: the data plane is unavailable.
        </Text>
      )}
    </Card>
  );
}

const STAGE_COLOR = { ok: 'teal', warning: 'yellow', critical: 'red' } as const;

/** The data disk: commits stop when it is full, so its fill level belongs on the first page. */
function DiskCard() {
  const storage = useQuery(storageQuery());
  const disk = storage.data?.disk;
  return (
    <Card withBorder data-testid="disk-card">
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        Data disk
      </Text>
      {disk ? (
        <>
          <Group mt="xs" gap="xs">
            <Text fw={600}>{disk.used_percent}% used</Text>
            {disk.stage !== 'ok' && <Badge color={STAGE_COLOR[disk.stage]}>{disk.stage}</Badge>}
          </Group>
          <Progress value={disk.used_percent} color={STAGE_COLOR[disk.stage]} mt={4} aria-label="Data disk used" />
          <Text size="sm" c="dimmed" mt={4}>
            {byteSize(disk.free_bytes)} free of {byteSize(disk.total_bytes)} on {disk.path}; database {byteSize(disk.database_bytes)},
            WAL {byteSize(disk.wal_bytes)}; statistics history {byteSize(disk.statistics_history_bytes)}.
          </Text>
        </>
      ) : (
        <Text size="sm" c="dimmed" mt="xs">
          {storage.error ? errorMessage(storage.error) : 'Measuring…'}
        </Text>
      )}
    </Card>
  );
}

function Metric({ label, value }: { label: string; value: string }) {
  return (
    <div>
      <Text fw={700} size="lg" className="num">
        {value}
      </Text>
      <Text size="xs" c="dimmed">
        {label}
      </Text>
    </div>
  );
}
