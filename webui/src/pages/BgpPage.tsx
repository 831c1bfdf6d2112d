import { Alert, Badge, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { errorMessage } from '../api/errors';
import { bgpSettingsQuery, bgpStatusQuery } from '../api/queries/bgp';
import type { BgpNeighborView, BgpRead, BgpView } from '../client/types.gen';
import { DataTable } from '../components/DataTable';
import { FieldTable, type FieldRow } from '../components/FieldTable';
import { PageLoader } from '../components/PageLoader';
import { ANNOUNCES_AGAIN } from '../lib/bgp';

/** How long a session has been up, as bgpd counts it: "3 s", "12 min", "2 h 5 min", "4 d 1 h". */
export function upFor(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/** BGP: this node's announcements of the VIPs as FRR runs them, its sessions, and its settings. */
export default function BgpPage() {
  const status = useQuery(bgpStatusQuery());
  const settings = useQuery(bgpSettingsQuery());
  return (
    <Stack>
      <Title order={2}>BGP</Title>
      {status.isPending ? (
        <PageLoader />
      ) : status.error ? (
        <Alert color="red" title="FRR cannot be asked now">
          {errorMessage(status.error)}
        </Alert>
      ) : !status.data.managed ? (
        <Alert color="gray" title="BGP is not managed on this node">
          FRR is not one of this node's daemons (FULCRUM_FRR_CONFIG is not set), so nothing is announced from here.
        </Alert>
      ) : (
        <LiveBgp view={status.data} />
      )}
      {settings.data !== undefined && <Settings bgp={settings.data} />}
    </Stack>
  );
}

function AnnouncingBadge({ view }: { view: BgpView }) {
  if (view.announcing === true) return <Badge color="green">announcing</Badge>;
  if (view.announcing === false) return <Badge color="orange">withdrawn</Badge>;
  return <Badge color="gray">nothing to announce</Badge>;
}

function LiveBgp({ view }: { view: BgpView }) {
  const originated = view.originated ?? [];
  return (
    <>
      <Card withBorder data-testid="bgp-node">
        <Stack gap="xs">
          <Group gap="xs">
            <Text fw={500}>This node</Text>
            <AnnouncingBadge view={view} />
          </Group>
          {view.fitness && (
            <Text size="sm" c={view.announcing === false ? 'orange' : 'dimmed'} data-testid="bgp-fitness">
              {view.announcing === false ? `Withdrawn because ${view.fitness}. ${ANNOUNCES_AGAIN}` : `Fitness: ${view.fitness}.`}
            </Text>
          )}
          <Text size="sm" data-testid="bgp-originated">
            {originated.length ? `Originates ${originated.join(', ')}` : 'Originates no prefix'}
          </Text>
          {view.error && (
            <Alert color="red" title="FRR did not answer">
              {view.error}
            </Alert>
          )}
        </Stack>
      </Card>
      <Title order={3}>Sessions</Title>
      <DataTable<BgpNeighborView>
        label="BGP sessions"
        columns={['Neighbor', 'Remote AS', 'State', 'Up for', 'Routes sent', 'BFD', 'Last reset']}
        rows={view.neighbors ?? []}
        rowKey={(n) => n.address}
        minWidth={720}
        empty="No neighbors."
        cells={(n) => (
          <>
            <Table.Td className="mono">{n.address}</Table.Td>
            <Table.Td>{n.remote_asn ?? '—'}</Table.Td>
            <Table.Td>
              <Badge color={n.state === 'Established' ? 'green' : 'red'}>{n.state}</Badge>
            </Table.Td>
            <Table.Td>{n.up_seconds == null ? '—' : upFor(n.up_seconds)}</Table.Td>
            <Table.Td>{n.prefixes_sent}</Table.Td>
            <Table.Td>{n.bfd ?? 'off'}</Table.Td>
            <Table.Td>{n.last_reset ?? '—'}</Table.Td>
          </>
        )}
      />
    </>
  );
}

function Settings({ bgp }: { bgp: BgpRead | null }) {
  if (bgp === null) {
    return <Text c="dimmed">No BGP settings on this node (PUT /api/v1/bgp, admin).</Text>;
  }
  const rows: FieldRow[] = [
    ['AS number', String(bgp.asn)],
    ['Router ID', bgp.router_id],
    ['Neighbors', bgp.neighbors.map((n) => `${n.address} (AS ${n.remote_asn})`).join(', ') || 'none'],
    ['Announces', bgp.announce == null ? 'every enabled service’s VIP' : bgp.announce.join(', ') || 'nothing'],
    ['Communities', [...(bgp.communities ?? []), ...(bgp.large_communities ?? [])].join(', ') || 'none'],
  ];
  return (
    <>
      <Title order={3}>Settings</Title>
      <Card withBorder>
        <Stack gap="xs">
          <FieldTable rows={rows} labelWidth={160} />
          <Text size="xs" c="dimmed">
            Node-local, never replicated; changed through the API (PUT /api/v1/bgp, admin) and applied at the next commit.
          </Text>
        </Stack>
      </Card>
    </>
  );
}
