import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { Notifications } from '@mantine/notifications';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import '../../api/http'; // the client as the app configures it: a refusal is thrown as an ApiError
import type { BgpView, ClusterBgp, ClusterNode, ClusterStatus, Me, Role } from '../../client/types.gen';
import { fakeApi, type FakeAnswers, type SentBody } from '../../test/fakeApi';
import { ClusterCard } from './ClusterCard';

const me = (role: Role): Me => ({ id: 1, username: role, role, disabled: false, created_at: '2026-12-01T00:00:00Z', client_address: '192.0.2.99' });

const node = (name: string, more: Partial<ClusterNode>): ClusterNode => ({
  name,
  url: `http://10.0.0.${name.slice(-1)}:8000`,
  writer: false,
  local: false,
  reachable: true,
  last_seen: '2026-12-01T05:00:00Z',
  maintenance: false,
  revision: 3,
  shared_hash: 'h',
  sync: 'in_sync',
  sync_message: '',
  connections: 0,
  share: null,
  software_version: '0.1.0',
  joined_at: '2026-12-01T04:00:00Z',
  ...more,
});

const WRITER: ClusterStatus = {
  role: 'writer',
  writer: 'lb1',
  writer_url: null,
  message: '',
  nodes: [
    node('lb1', { url: null, writer: true, local: true, revision: 7, sync: null, connections: 50, share: 0.5, joined_at: null }),
    node('lb2', { maintenance: true, connections: 30, share: 0.3 }),
    node('lb3', { reachable: false, sync: 'unreachable', connections: null, sync_message: 'the peer at http://10.0.0.3:8000 is not reachable' }),
  ],
};

const announcing = (neighborState: string, bfd: string | null): BgpView => ({
  managed: true,
  announcing: true,
  fitness: 'every announced service has a live backend',
  originated: ['192.0.2.10/32'],
  neighbors: [{ address: '10.0.0.254', remote_asn: 64512, state: neighborState, up_seconds: 60, prefixes_sent: 1, last_reset: null, bfd }],
  error: null,
});

const BGP: ClusterBgp = {
  message: '',
  nodes: [
    { name: 'lb1', local: true, error: '', bgp: announcing('Established', 'up') },
    { name: 'lb2', local: false, error: '', bgp: { ...announcing('Established', 'up'), announcing: false, fitness: 'the node is in maintenance', originated: [] } },
    { name: 'lb3', local: false, error: 'could not be asked: the peer at http://10.0.0.3:8000 is not reachable', bgp: null },
  ],
};

function show(status: ClusterStatus, role: Role, more: FakeAnswers = {}, sent?: SentBody[], urls?: string[]) {
  fakeApi(
    {
      'GET /api/v1/cluster': { status: 200, body: status },
      'GET /api/v1/cluster/bgp': { status: 200, body: BGP },
      'GET /api/v1/auth/me': { status: 200, body: me(role) },
      ...more,
    },
    sent,
    urls,
  );
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <MantineProvider>
      <QueryClientProvider client={queryClient}>
        <ModalsProvider>
          <Notifications />
          <ClusterCard />
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>,
  );
}

const cells = (table: HTMLElement) =>
  within(table)
    .getAllByRole('row')
    .slice(1)
    .map((row) => Array.from(row.querySelectorAll('td'), (cell) => cell.textContent));

describe('ClusterCard', () => {
  it('shows every node with its state, sync and share of the connections', async () => {
    show(WRITER, 'viewer');
    const table = await screen.findByRole('table', { name: 'Cluster nodes' });
    expect(cells(table)).toEqual([
      ['lb1writerthis node', 'in service', 'revision 7', '50 (50 %)', '0.1.0'],
      ['lb2http://10.0.0.2:8000', 'drained', 'in syncits revision 3', '30 (30 %)', '0.1.0'],
      ['lb3http://10.0.0.3:8000', 'unreachable', 'unreachableits revision 3', '—', '0.1.0'],
    ]);
    expect(screen.queryByRole('group', { name: /Actions for/ })).toBeNull(); // a viewer only looks
    expect(screen.queryByText('Add a member')).toBeNull();
  });

  it("shows every node's BGP sessions and BFD, and why a node announces nothing or could not be asked", async () => {
    show(WRITER, 'viewer');
    const table = await screen.findByRole('table', { name: "Every node's BGP" });
    await waitFor(() => expect(within(table).getAllByRole('row')).toHaveLength(4));
    expect(cells(table)).toEqual([
      ['lb1', 'announcing', '10.0.0.254EstablishedBFD up', '192.0.2.10/32'],
      ['lb2', 'withdrawn', '10.0.0.254EstablishedBFD up', '—'],
      ['lb3', 'could not be asked: the peer at http://10.0.0.3:8000 is not reachable'],
    ]);
  });

  it('says why a member sees no BGP picture', async () => {
    show({ ...WRITER, role: 'member' }, 'viewer', {
      'GET /api/v1/cluster/bgp': { status: 200, body: { nodes: [], message: 'the writer lb1 could not be asked for the cluster’s BGP: timed out' } },
    });
    expect(await screen.findByText(/could not be asked for the cluster’s BGP: timed out/)).toBeTruthy();
  });

  it('lets an operator drain or return a member, asking first', async () => {
    const sent: SentBody[] = [];
    show(WRITER, 'operator', { 'POST /api/v1/cluster/members/lb2/drain': { status: 200, body: { maintenance: false, file: '' } } }, sent);
    const actions = await screen.findByRole('group', { name: 'Actions for lb2' });
    await userEvent.click(within(actions).getByRole('button', { name: 'Return to service' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByText(/lb2 announces its VIPs again/)).toBeInTheDocument();
    expect(sent).toEqual([]);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Return to service' }));
    await waitFor(() => expect(sent).toEqual([{ call: 'POST /api/v1/cluster/members/lb2/drain', body: { enabled: false } }]));
    expect(within(actions).queryByRole('button', { name: 'Remove' })).toBeNull(); // an admin's
  });

  it('removes a member that does not answer only when the admin confirms it is gone for good', async () => {
    const urls: string[] = [];
    show(WRITER, 'admin', { 'DELETE /api/v1/cluster/members/lb3': { status: 200, body: { member: 'lb3', told: 'not told' } } }, undefined, urls);
    const actions = await screen.findByRole('group', { name: 'Actions for lb3' });
    await userEvent.click(await within(actions).findByRole('button', { name: 'Remove' }));
    const dialog = await screen.findByRole('dialog', { name: 'Remove lb3, which does not answer?' });
    expect(within(dialog).getByText(/if it comes back it still announces the VIPs/)).toBeInTheDocument();
    await userEvent.click(within(dialog).getByRole('button', { name: 'Remove anyway' }));
    await waitFor(() => expect(urls).toContain('DELETE /api/v1/cluster/members/lb3?force=true'));
  });

  it('adds a member with its address and code, and shows a refusal at the field', async () => {
    const sent: SentBody[] = [];
    const refusal = { detail: [{ loc: ['body', 'code'], msg: 'the pairing code was not accepted by the peer', type: 'value_error' }] };
    show(WRITER, 'admin', { 'POST /api/v1/cluster/members': { status: 422, body: refusal } }, sent);
    await userEvent.type(await screen.findByLabelText(/The new node’s address/), '10.0.0.4');
    await userEvent.type(screen.getByLabelText(/Its pairing code/), 'abcd efgh jkmn');
    await userEvent.click(screen.getByRole('button', { name: 'Add member…' }));
    const dialog = await screen.findByRole('dialog');
    expect(within(dialog).getByText(/its services, VIP groups, firewall and user accounts are replaced/)).toBeInTheDocument();
    await userEvent.click(within(dialog).getByRole('button', { name: 'Add and replace' }));
    await waitFor(() => expect(sent).toHaveLength(1));
    expect(sent[0]).toEqual({ call: 'POST /api/v1/cluster/members', body: { peer_url: 'https://10.0.0.4', code: 'ABCD-EFGH-JKMN', local_url: null } });
    expect(await screen.findByText('the pairing code was not accepted by the peer')).toBeInTheDocument();
    expect(screen.getByLabelText(/The new node’s address/)).toHaveValue('10.0.0.4');
  });

  it('on a member: names the writer, shows the picture read from it, offers no actions', async () => {
    const seen: ClusterStatus = {
      ...WRITER,
      role: 'member',
      writer_url: 'http://10.0.0.1:8000',
      nodes: WRITER.nodes.map((n) => ({ ...n, local: n.name === 'lb2', url: n.writer ? 'http://10.0.0.1:8000' : n.url })),
    };
    show(seen, 'admin');
    expect(await screen.findByText(/This node is a member of the cluster led by/)).toHaveTextContent('http://10.0.0.1:8000');
    const table = screen.getByRole('table', { name: 'Cluster nodes' });
    expect(cells(table)[1][0]).toBe('lb2this nodehttp://10.0.0.2:8000');
    expect(screen.queryByRole('group', { name: /Actions for/ })).toBeNull();
    expect(screen.queryByText('Add a member')).toBeNull();
  });

  it('on a node alone: how to join a cluster or start one', async () => {
    show({ role: 'none', writer: null, writer_url: null, nodes: [], message: '' }, 'admin');
    expect(await screen.findByText(/This node runs alone/)).toBeInTheDocument();
    expect(await screen.findByText('Let this node join a cluster')).toBeInTheDocument();
    expect(screen.getByRole('button', { name: 'Show a pairing code' })).toBeInTheDocument();
    expect(screen.getByText('Add a member')).toBeInTheDocument();
  });
});
