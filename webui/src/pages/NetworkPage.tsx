import { Alert, Badge, Button, Card, Group, SimpleGrid, Stack, Table, Text, Title } from '@mantine/core';
import { modals } from '@mantine/modals';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { errorMessage } from '../api/errors';
import {
  clockQuery,
  interfacesQuery,
  kernelRoutesQuery,
  networkQuery,
  stopManagingMutation,
  takeOverMutation,
} from '../api/queries/network';
import { useCan } from '../auth/useCurrentUser';
import type { ClockStatus, KernelInterface, KernelRoute, NetworkConfig } from '../client/types.gen';
import { DataTable } from '../components/DataTable';
import { FieldTable } from '../components/FieldTable';
import { NetworkEditor } from '../components/network/NetworkEditor';
import { SavedAsPendingAlert } from '../components/SavedAsPendingAlert';
import { PageLoader } from '../components/PageLoader';
import { byteSize, compact } from '../lib/format';
import { isDefaultRoute, MAIN_TABLE, memberStates } from '../lib/network';

/**
 * This node's own network: the kernel's interfaces live, the clock, and the network Fulcrum manages
 * (node-local, never replicated). Edits are pending changes like any other, applied by a commit.
 */
export default function NetworkPage() {
  const network = useQuery(networkQuery());
  const interfaces = useQuery(interfacesQuery());
  const routes = useQuery(kernelRoutesQuery());
  const canEdit = useCan('editNetwork');
  const [editing, setEditing] = useState<NetworkConfig | null>(null);
  const takeOver = useMutation({ ...takeOverMutation(), onSuccess: setEditing });
  const [saved, setSaved] = useState(false);
  const managed = network.data ?? null;

  return (
    <Stack>
      <Title order={2}>Network</Title>
      <Text c="dimmed" size="sm">
        This appliance’s own interfaces, addresses, routes, DNS and time. Node-local: each node of an HA pair has its own.
      </Text>
      {interfaces.error ? (
        <Alert color="red">{errorMessage(interfaces.error)}</Alert>
      ) : (
        <InterfacesTable interfaces={interfaces.data} management={managed?.management_interface ?? null} />
      )}
      {interfaces.data && <BondsCard interfaces={interfaces.data} />}
      {routes.error ? <Alert color="red">{errorMessage(routes.error)}</Alert> : <KernelRoutesTable routes={routes.data} />}
      <ClockCard />
      {network.isPending ? (
        <PageLoader />
      ) : network.error ? (
        <Alert color="red">{errorMessage(network.error)}</Alert>
      ) : editing ? (
        <NetworkEditor
          initial={editing}
          takingOver={managed === null}
          interfaces={interfaces.data ?? []}
          onCancel={() => setEditing(null)}
          onSaved={() => {
            setEditing(null);
            setSaved(true);
          }}
        />
      ) : (
        <>
          {saved && <SavedAsPendingAlert what="this node’s network" onClose={() => setSaved(false)} />}
          {managed ? (
            <ManagedNetwork network={managed} canEdit={canEdit} onEdit={() => setEditing(managed)} />
          ) : (
            <Unmanaged
              canEdit={canEdit}
              loading={takeOver.isPending}
              error={takeOver.error ? errorMessage(takeOver.error) : null}
              onTakeOver={() => takeOver.mutate(window.location.hostname)}
            />
          )}
        </>
      )}
    </Stack>
  );
}

// A badge in a narrow table cell would otherwise shrink to an ellipsis ("NO CA...").
const NO_TRUNCATION = { flexShrink: 0, minWidth: 'max-content' } as const;

function linkBadge(i: KernelInterface) {
  const up = i.operstate === 'up' || (i.operstate === 'unknown' && i.carrier);
  const label = up ? 'up' : i.operstate === 'down' && !i.carrier ? 'no carrier' : i.operstate;
  return (
    <Badge color={up ? 'green' : 'red'} variant="light" style={NO_TRUNCATION}>
      {label}
    </Badge>
  );
}

function InterfacesTable({ interfaces, management }: { interfaces: KernelInterface[] | undefined; management: string | null }) {
  return (
    <Stack gap="xs">
      <Title order={4}>Interfaces</Title>
      <DataTable
        label="Interfaces"
        dense
        minWidth={980}
        columns={['Interface', 'Link', 'Speed', 'MTU', 'MAC', 'Addresses', 'Received', 'Sent', 'Errors / drops']}
        rows={interfaces}
        rowKey={(i) => i.name}
        empty="The kernel lists no interfaces."
        cells={(i) => (
          <>
            <Table.Td>
              <Group gap={6} wrap="nowrap">
                <Text span fw={600} className="mono" size="sm">
                  {i.name}
                </Text>
                {i.name === management && (
                  <Badge size="xs" variant="outline" style={NO_TRUNCATION}>
                    management
                  </Badge>
                )}
              </Group>
              <Text size="xs" c="dimmed">
                {i.kind}
                {i.driver ? ` · ${i.driver}` : ''}
                {i.bond_master ? ` · in ${i.bond_master}` : ''}
                {i.configured ? ' · managed' : ''}
              </Text>
            </Table.Td>
            <Table.Td data-testid={`link-${i.name}`}>{linkBadge(i)}</Table.Td>
            <Table.Td className="num">{i.speed_mbps ? `${compact(i.speed_mbps * 1e6)}bit/s` : '—'}</Table.Td>
            <Table.Td className="num">{i.mtu}</Table.Td>
            <Table.Td className="mono">{i.mac}</Table.Td>
            <Table.Td className="mono" data-testid={`addresses-${i.name}`}>
              {i.prefixed_addresses.length ? (
                i.prefixed_addresses.map((a) => (
                  <div key={a}>
                    {a}
                    {i.dynamic_addresses.includes(a) && (
                      <Text span size="xs" c="dimmed">
                        {' '}
                        (dynamic)
                      </Text>
                    )}
                  </div>
                ))
              ) : (
                <Text span c="dimmed">
                  none
                </Text>
              )}
            </Table.Td>
            <Table.Td className="num" data-testid={`rx-${i.name}`} data-bytes={i.counters.rx_bytes}>
              {byteSize(i.counters.rx_bytes ?? 0)}
              <Text size="xs" c="dimmed">
                {compact(i.counters.rx_packets ?? 0)} pkts
              </Text>
            </Table.Td>
            <Table.Td className="num">
              {byteSize(i.counters.tx_bytes ?? 0)}
              <Text size="xs" c="dimmed">
                {compact(i.counters.tx_packets ?? 0)} pkts
              </Text>
            </Table.Td>
            <Table.Td className="num">
              {compact((i.counters.rx_errors ?? 0) + (i.counters.tx_errors ?? 0))} /{' '}
              {compact((i.counters.rx_dropped ?? 0) + (i.counters.tx_dropped ?? 0))}
            </Table.Td>
          </>
        )}
      />
    </Stack>
  );
}

function KernelRoutesTable({ routes }: { routes: KernelRoute[] | undefined }) {
  return (
    <Stack gap="xs">
      <Title order={4}>Routes in the kernel</Title>
      <DataTable
        label="Routes in the kernel"
        dense
        minWidth={720}
        columns={['Destination', 'Gateway', 'Interface', 'Table', 'Made by', 'Metric']}
        rows={routes}
        rowKey={(r) => `${r.table} ${r.destination} ${r.gateway ?? ''} ${r.interface ?? ''} ${r.metric ?? ''}`}
        empty="The kernel has no routes."
        cells={(r) => (
          <>
            <Table.Td className="mono">{isDefaultRoute(r) ? `default (${r.destination})` : r.destination}</Table.Td>
            <Table.Td className="mono">{r.gateway ?? 'on-link'}</Table.Td>
            <Table.Td className="mono">{r.interface ?? '—'}</Table.Td>
            <Table.Td className="num">{r.table === MAIN_TABLE ? 'main' : r.table}</Table.Td>
            <Table.Td>{r.protocol}</Table.Td>
            <Table.Td className="num">{r.metric ?? '—'}</Table.Td>
          </>
        )}
      />
    </Stack>
  );
}

function BondsCard({ interfaces }: { interfaces: KernelInterface[] }) {
  const bonds = interfaces.filter((i) => i.kind === 'bond');
  if (!bonds.length) return null;
  return (
    <Card withBorder>
      <Title order={4} mb="xs">
        Bonds
      </Title>
      <Stack gap="xs">
        {bonds.map((bond) => (
          <Group key={bond.name} gap="xs" data-testid={`bond-${bond.name}`}>
            <Text fw={600} className="mono">
              {bond.name}
            </Text>
            {linkBadge(bond)}
            {memberStates(bond, interfaces).map((m) => (
              <Badge key={m.name} color={m.up ? 'green' : 'red'} variant="dot" style={{ ...NO_TRUNCATION, textTransform: 'none' }}>
                {m.name} {m.up ? 'up' : 'down'}
                {m.speed ? ` · ${compact(m.speed * 1e6)}bit/s` : ''}
              </Badge>
            ))}
          </Group>
        ))}
      </Stack>
    </Card>
  );
}

/** Microseconds as an operator reads an offset: "0.4 ms", "16 s". */
function duration(us: number): string {
  const abs = Math.abs(us);
  if (abs >= 1e6) return `${(us / 1e6).toFixed(abs >= 1e7 ? 0 : 1)} s`;
  if (abs >= 1e3) return `${(us / 1e3).toFixed(1)} ms`;
  return `${Math.round(us)} µs`;
}

function ClockCard() {
  const clock = useQuery(clockQuery());
  return (
    <Card withBorder>
      <Title order={4} mb="xs">
        Time
      </Title>
      {clock.error ? <Alert color="red">{errorMessage(clock.error)}</Alert> : clock.data ? <ClockFields clock={clock.data} /> : <PageLoader />}
    </Card>
  );
}

function ClockFields({ clock }: { clock: ClockStatus }) {
  return (
    <FieldTable
      labelWidth={150}
      rows={[
        [
          'System clock',
          <Group gap="xs" key="sync">
            <Badge color={clock.synchronised ? 'green' : 'red'} variant="light" data-testid="clock-sync" style={NO_TRUNCATION}>
              {clock.synchronised ? 'synchronised' : 'not synchronised'}
            </Badge>
            <Text size="xs" c="dimmed">
              kernel state: {clock.state}
            </Text>
          </Group>,
        ],
        ['Offset being corrected', <span className="num">{duration(clock.offset_us)}</span>],
        [
          'Error (estimated / at most)',
          <span className="num" data-testid="clock-error">
            {duration(clock.estimated_error_us)} / {duration(clock.max_error_us)}
          </span>,
        ],
        ['NTP servers', clock.ntp_servers.length ? <span className="mono">{clock.ntp_servers.join(', ')}</span> : 'none configured here'],
      ]}
    />
  );
}

function Unmanaged({
  canEdit,
  loading,
  error,
  onTakeOver,
}: {
  canEdit: boolean;
  loading: boolean;
  error: string | null;
  onTakeOver: () => void;
}) {
  return (
    <Alert color="gray" title="Fulcrum does not manage this node’s network yet" data-testid="network-unmanaged">
      <Stack gap="xs" align="flex-start">
        <Text size="sm">
          The interfaces above run as the console or the first boot set them up. Managing them here starts from what runs now:
          each NIC with its addresses, each bond with its members, the default gateways and the routes configured by hand. Check
          the result before saving: bond modes and VLANs are not read from the kernel.
        </Text>
        {error && (
          <Text size="sm" c="red" role="alert">
            {error}
          </Text>
        )}
        {canEdit ? (
          <Button onClick={onTakeOver} loading={loading}>
            Manage this node’s network
          </Button>
        ) : (
          <Text size="xs" c="dimmed">
            Only an administrator can change this node’s network.
          </Text>
        )}
      </Stack>
    </Alert>
  );
}

function ManagedNetwork({ network, canEdit, onEdit }: { network: NetworkConfig; canEdit: boolean; onEdit: () => void }) {
  const queryClient = useQueryClient();
  const stop = useMutation(stopManagingMutation(queryClient));
  const list = (items: string[] | undefined) => (items?.length ? <span className="mono">{items.join(', ')}</span> : 'none');
  const confirmStop = () =>
    modals.openConfirmModal({
      title: 'Stop managing this node’s network?',
      children: (
        <Text size="sm">
          When applied, Fulcrum removes its interface files and the console’s management network applies again. The commit must
          be confirmed in time, or the managed network comes back by itself.
        </Text>
      ),
      labels: { confirm: 'Stop managing', cancel: 'Go back' },
      confirmProps: { color: 'red' },
      onConfirm: () => stop.mutate(),
    });
  return (
    <Stack>
      <Group justify="space-between">
        <Title order={3}>Managed configuration</Title>
        {canEdit && (
          <Group gap="xs">
            <Button variant="default" color="red" onClick={confirmStop} loading={stop.isPending}>
              Stop managing
            </Button>
            <Button onClick={onEdit}>Edit network</Button>
          </Group>
        )}
      </Group>
      {stop.error && <Alert color="red">{errorMessage(stop.error)}</Alert>}
      {!canEdit && (
        <Text size="xs" c="dimmed">
          Only an administrator can change this node’s network.
        </Text>
      )}
      <SimpleGrid cols={{ base: 1, md: 2 }}>
        <Card withBorder>
          <FieldTable
            labelWidth={170}
            rows={[
              ['Host name', <span className="mono" data-testid="managed-hostname">{network.hostname}</span>],
              ['Management interface', <span className="mono" data-testid="managed-management">{network.management_interface}</span>],
              ['Default gateway (IPv4)', list(network.gateway4 ? [network.gateway4] : [])],
              ['Default gateway (IPv6)', list(network.gateway6 ? [network.gateway6] : [])],
            ]}
          />
        </Card>
        <Card withBorder>
          <FieldTable
            labelWidth={170}
            rows={[
              ['DNS servers', list(network.dns_servers)],
              ['Search domains', list(network.search_domains)],
              ['NTP servers', list(network.ntp_servers)],
            ]}
          />
        </Card>
      </SimpleGrid>
      <Title order={4}>Managed interfaces</Title>
      <DataTable
        label="Managed interfaces"
        minWidth={720}
        columns={['Interface', 'Kind', 'Addresses', 'MTU', 'State']}
        rows={[
          ...(network.nics ?? []).map((n) => ({ ...n, kind: `NIC ${n.mac}` })),
          ...(network.bonds ?? []).map((b) => ({ ...b, kind: `bond ${b.mode ?? 'active-backup'} of ${b.members.join(', ')}` })),
          ...(network.vlans ?? []).map((v) => ({ ...v, kind: `VLAN ${v.vlan_id} on ${v.parent}` })),
        ]}
        rowKey={(i) => i.name}
        cells={(i) => (
          <>
            <Table.Td className="mono">{i.name}</Table.Td>
            <Table.Td>{i.kind}</Table.Td>
            <Table.Td className="mono">
              {[...(i.addresses ?? []), ...(i.dhcp4 ? ['DHCPv4'] : []), ...(i.ipv6_autoconf ? ['SLAAC'] : [])].join(', ') || '—'}
            </Table.Td>
            <Table.Td className="num">{i.mtu ?? 'default'}</Table.Td>
            <Table.Td>{i.enabled === false ? 'down' : 'up'}</Table.Td>
          </>
        )}
      />
      <Title order={4}>Routes</Title>
      <DataTable
        label="Routes"
        minWidth={560}
        columns={['Destination', 'Gateway', 'Table', 'Metric']}
        rows={network.routes ?? []}
        rowKey={(r) => `${r.destination} ${r.gateway} ${r.table ?? ''}`}
        empty="No static routes besides the default gateways."
        cells={(r) => (
          <>
            <Table.Td className="mono">{r.destination}</Table.Td>
            <Table.Td className="mono">{r.gateway}</Table.Td>
            <Table.Td className="num">{r.table ?? 'main'}</Table.Td>
            <Table.Td className="num">{r.metric ?? '—'}</Table.Td>
          </>
        )}
      />
    </Stack>
  );
}
