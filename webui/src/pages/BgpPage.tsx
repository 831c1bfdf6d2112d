import { Alert, Badge, Button, Card, Group, Stack, Table, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import { bgpSettingsQuery, bgpStatusQuery, removeBgpMutation } from '../api/queries/bgp';
import { useCan } from '../auth/useCurrentUser';
import type { BgpNeighborView, BgpRead, BgpView } from '../client/types.gen';
import { AnnouncingBadge } from '../components/bgp/AnnouncingBadge';
import { BgpEditor } from '../components/bgp/BgpEditor';
import { ClusterCard } from '../components/cluster/ClusterCard';
import { DrainControl } from '../components/bgp/DrainControl';
import { ConfirmButton } from '../components/ConfirmButton';
import { DataTable } from '../components/DataTable';
import { FieldTable, type FieldRow } from '../components/FieldTable';
import { PageLoader } from '../components/PageLoader';
import { SavedAsPendingAlert } from '../components/SavedAsPendingAlert';
import { ANNOUNCES_AGAIN } from '../lib/bgp';

/** How long a session has been up, as bgpd counts it: "3 s", "12 min", "2 h 5 min", "4 d 1 h". */
export function upFor(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/**
 * Cluster & BGP: the cluster's nodes (one configuration from one writer), then this node's
 * announcements of the VIPs as FRR runs them, its sessions, and its settings.
 */
export default function BgpPage() {
  const status = useQuery(bgpStatusQuery());
  const settings = useQuery(bgpSettingsQuery());
  return (
    <Stack>
      <Title order={2}>Cluster & BGP</Title>
      <ClusterCard />
      <Title order={3}>This node’s BGP</Title>
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
        <LiveBgp view={status.data} bgp={settings.data} />
      )}
      {settings.error ? (
        <Alert color="red">{errorMessage(settings.error)}</Alert>
      ) : (
        settings.data !== undefined && <Settings bgp={settings.data} />
      )}
    </Stack>
  );
}

/** Each neighbor's description from the settings, by address: bgpd's view has none. */
function descriptionsOf(bgp: BgpRead | null | undefined): Map<string, string> {
  return new Map((bgp?.neighbors ?? []).flatMap((n) => (n.description ? [[n.address, n.description]] : [])));
}

function LiveBgp({ view, bgp }: { view: BgpView; bgp: BgpRead | null | undefined }) {
  const originated = view.originated ?? [];
  const descriptions = descriptionsOf(bgp);
  return (
    <>
      <Card withBorder data-testid="bgp-node">
        <Stack gap="xs">
          <Group justify="space-between">
            <Group gap="xs">
              <Text fw={500}>This node</Text>
              <AnnouncingBadge view={view} />
            </Group>
            {bgp && bgp.enabled !== false && <DrainControl />}
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
      <Title order={4}>Sessions</Title>
      <DataTable<BgpNeighborView>
        label="BGP sessions"
        columns={['Neighbor', 'Remote AS', 'State', 'Up for', 'Routes sent', 'BFD', 'Last reset']}
        rows={view.neighbors ?? []}
        rowKey={(n) => n.address}
        minWidth={720}
        empty="No neighbors."
        cells={(n) => (
          <>
            <Table.Td>
              <Text size="sm" className="mono">
                {n.address}
              </Text>
              {descriptions.has(n.address) && (
                <Text size="xs" c="dimmed">
                  {descriptions.get(n.address)}
                </Text>
              )}
            </Table.Td>
            <Table.Td>{n.remote_asn ?? '—'}</Table.Td>
            <Table.Td>
              <Badge color={n.state === 'Established' ? 'green' : 'red'}>{n.state}</Badge>
            </Table.Td>
            <Table.Td>{n.up_seconds == null ? '—' : upFor(n.up_seconds)}</Table.Td>
            <Table.Td>{n.prefixes_sent}</Table.Td>
            <Table.Td>{n.bfd ?? 'off'}</Table.Td>
            <Table.Td>
              {n.last_reset == null ? (
                '—'
              ) : n.state === 'Established' ? (
                // bgpd's reason for the reset before this session: history, not a fault now.
                <Text size="sm" c="dimmed">
                  before this session: {n.last_reset}
                </Text>
              ) : (
                n.last_reset
              )}
            </Table.Td>
          </>
        )}
      />
    </>
  );
}

/** The settings as stored (a pending change until committed), and for an admin the editor. */
function Settings({ bgp }: { bgp: BgpRead | null }) {
  const canEdit = useCan('editBgp');
  const queryClient = useQueryClient();
  const remove = useMutation(removeBgpMutation(queryClient));
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState(false);
  if (editing) {
    return (
      <BgpEditor
        initial={bgp}
        onCancel={() => setEditing(false)}
        onSaved={() => {
          setEditing(false);
          setSaved(true);
        }}
      />
    );
  }
  return (
    <>
      <Group justify="space-between">
        <Title order={4}>Settings</Title>
        {canEdit && (
          <Group gap="xs">
            {bgp && (
              <ConfirmButton
                color="red"
                loading={remove.isPending}
                title="Remove this node’s BGP?"
                consequence="When applied, FRR withdraws every VIP from the routers and closes its sessions; the router sends their flows to the other nodes."
                confirmLabel="Remove BGP"
                onConfirm={() => remove.mutate(undefined, { onSuccess: () => setSaved(true) })}
              >
                Remove BGP
              </ConfirmButton>
            )}
            <Button onClick={() => setEditing(true)}>{bgp ? 'Edit BGP' : 'Set up BGP'}</Button>
          </Group>
        )}
      </Group>
      {saved && <SavedAsPendingAlert what="what this node announces" onClose={() => setSaved(false)} />}
      {remove.error && <Alert color="red">{errorMessage(remove.error)}</Alert>}
      {bgp === null ? (
        <Text c="dimmed">No BGP settings on this node: it announces nothing.</Text>
      ) : (
        <Card withBorder>
          <Stack gap="xs">
            <FieldTable rows={settingRows(bgp)} labelWidth={160} />
            <Text size="xs" c="dimmed">
              Node-local, never replicated; a change is applied at the next commit.
            </Text>
          </Stack>
        </Card>
      )}
      {!canEdit && (
        <Text size="xs" c="dimmed">
          Only an administrator can change this node’s BGP.
        </Text>
      )}
    </>
  );
}

function settingRows(bgp: BgpRead): FieldRow[] {
  const neighbor = (n: BgpRead['neighbors'][number]) =>
    `${n.address} (AS ${n.remote_asn}${n.bfd === false ? ', no BFD' : ''}${n.has_password ? ', password' : ''})`;
  return [
    ['Announcing', bgp.enabled === false ? 'off: every VIP withdrawn, no sessions' : 'on'],
    ['AS number', String(bgp.asn)],
    ['Router ID', bgp.router_id],
    ['Neighbors', bgp.neighbors.map(neighbor).join(', ') || 'none'],
    ['Announces', bgp.announce == null ? 'every enabled service’s VIP' : bgp.announce.join(', ') || 'nothing'],
    ['Communities', [...(bgp.communities ?? []), ...(bgp.large_communities ?? [])].join(', ') || 'none'],
  ];
}
