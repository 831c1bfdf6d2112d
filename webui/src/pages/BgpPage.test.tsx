import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import '../api/http'; // the client as the app configures it: a refusal is thrown as an ApiError
import type { BgpRead, BgpView, HaStatus, Me, Role } from '../client/types.gen';
import { fakeApi, type FakeAnswers, type SentBody } from '../test/fakeApi';
import BgpPage, { upFor } from './BgpPage';

const SETTINGS: BgpRead = {
  asn: 65001,
  router_id: '192.0.2.5',
  neighbors: [{ address: '10.0.1.254', remote_asn: 65000, has_password: false, bfd: true, description: 'core router A', timers: null }],
  announce: null,
  communities: ['65001:42'],
  large_communities: [],
  enabled: true,
};
const LIVE: BgpView = {
  managed: true,
  announcing: true,
  fitness: 'keepalived runs and the node is not in maintenance',
  originated: ['192.0.2.10/32'],
  neighbors: [
    { address: '10.0.1.254', remote_asn: 65000, state: 'Established', up_seconds: 7384, prefixes_sent: 1, last_reset: 'BGP Notification send', bfd: 'up' },
    { address: '10.0.2.254', remote_asn: 65000, state: 'Active', up_seconds: null, prefixes_sent: 0, last_reset: 'BFD down received', bfd: 'down' },
  ],
  error: null,
};

const me = (role: Role): Me => ({ id: 1, username: role, role, disabled: false, created_at: '2026-11-30T00:00:00Z', client_address: '192.0.2.99' });

function showPage(status: { status: number; body: unknown }, settings: BgpRead | null = SETTINGS, more: FakeAnswers = {}, sent?: SentBody[]) {
  const requests = fakeApi(
    {
      'GET /api/v1/bgp/status': status,
      'GET /api/v1/bgp': { status: 200, body: settings },
      'GET /api/v1/auth/me': { status: 200, body: me('viewer') },
      'GET /api/v1/cluster': { status: 200, body: { role: 'none', writer: null, writer_url: null, nodes: [], message: '' } },
      ...more,
    },
    sent,
  );
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <MantineProvider>
      <QueryClientProvider client={queryClient}>
        <ModalsProvider>
          <BgpPage />
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>,
  );
  return requests;
}

const ADMIN = { 'GET /api/v1/auth/me': { status: 200, body: me('admin') } };
const OPERATOR = { 'GET /api/v1/auth/me': { status: 200, body: me('operator') } };

/** A node of a BGP cluster: no VRRP peer. */
const haStatus = (maintenance: boolean): HaStatus => ({
  node: { name: 'lb3', role: maintenance ? 'maintenance' : 'standalone', groups: [], maintenance, writer: true, priority: 100, certificate: null, software_version: '0.1.0', config_schema: 1 },
  peer: null,
  sync: { state: 'unpaired', local_revision: 4, local_hash: 'a', peer_revision: null, peer_hash: null, since: null, message: '' },
  conn_sync: { enabled: false, interface: null, local_daemon: 'off', local_connections: 0, peer_connections: null },
  split_brain: { active: false, since: null, groups: [], holding: false },
  active: { name: 'lb3', local: true, url: null, split_brain: false },
  transitions: [],
});

describe('BgpPage', () => {
  it('shows what this node announces, each session with its BFD, and the settings', async () => {
    showPage({ status: 200, body: LIVE });
    const node = await screen.findByTestId('bgp-node');
    expect(within(node).getByText('announcing')).toBeInTheDocument();
    expect(screen.getByTestId('bgp-originated')).toHaveTextContent('Originates 192.0.2.10/32');
    expect(await screen.findByText('every enabled service’s VIP')).toBeInTheDocument(); // the settings, loaded
    const rows = within(screen.getByRole('table', { name: 'BGP sessions' })).getAllByRole('row').slice(1);
    // A session shows its neighbor's description from the settings under the address.
    expect(rows.map((row) => Array.from(row.querySelectorAll('td'), (cell) => cell.textContent))).toEqual([
      ['10.0.1.254core router A', '65000', 'Established', '2 h 3 min', '1', 'up', 'before this session: BGP Notification send'],
      ['10.0.2.254', '65000', 'Active', '—', '0', 'down', 'BFD down received'],
    ]);
    expect(screen.getByText('10.0.1.254 (AS 65000)')).toBeInTheDocument();
  });

  it('says why a withdrawn node announces nothing', async () => {
    showPage({ status: 200, body: { ...LIVE, announcing: false, fitness: 'keepalived is not running here, so IPVS is not kept' } });
    const node = await screen.findByTestId('bgp-node');
    expect(within(node).getByText('withdrawn')).toBeInTheDocument();
    expect(screen.getByTestId('bgp-fitness')).toHaveTextContent(
      'Withdrawn because keepalived is not running here, so IPVS is not kept. It announces again by itself once fit.',
    );
  });

  it('says plainly when FRR is not managed here, and when the helper cannot be asked', async () => {
    showPage({ status: 200, body: { managed: false } }, null);
    expect(await screen.findByText('BGP is not managed on this node')).toBeInTheDocument();
    expect(await screen.findByText(/No BGP settings on this node/)).toBeInTheDocument();
  });

  it('shows a 503 from the helper as what it is', async () => {
    showPage({ status: 503, body: { detail: 'apply helper not reachable at /run/fulcrum/applyd.sock' } });
    expect(await screen.findByText('FRR cannot be asked now')).toBeInTheDocument();
    expect(screen.getByText(/apply helper not reachable/)).toBeInTheDocument();
  });

  it('offers no editing to a viewer', async () => {
    showPage({ status: 200, body: LIVE });
    expect(await screen.findByText('Only an administrator can change this node’s BGP.')).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Edit BGP' })).toBeNull();
  });

  it('sets up BGP from nothing: the values typed are what the API receives', async () => {
    const sent: SentBody[] = [];
    const saved: BgpRead = { ...SETTINGS, asn: 65010, router_id: '192.0.2.7', communities: [] };
    showPage({ status: 200, body: { managed: true, announcing: null, fitness: null, originated: [], neighbors: [], error: null } }, null,
      { ...ADMIN, 'PUT /api/v1/bgp': { status: 200, body: saved } }, sent);
    await userEvent.click(await screen.findByRole('button', { name: 'Set up BGP' }));
    const form = screen.getByRole('form', { name: 'BGP settings' });
    await userEvent.type(within(form).getByLabelText(/^AS number/), '65010');
    await userEvent.type(within(form).getByLabelText(/^Router ID/), '192.0.2.7');
    await userEvent.click(within(form).getByRole('button', { name: 'Add neighbor' }));
    const neighbor = within(form).getByRole('group', { name: 'Neighbor 1' });
    await userEvent.type(within(neighbor).getByLabelText('Router address'), '10.0.1.254');
    await userEvent.type(within(neighbor).getByLabelText('Router’s AS number'), '65000');
    await userEvent.type(within(neighbor).getByLabelText(/^TCP-MD5 password/), 'k3y');
    await userEvent.click(within(form).getByRole('button', { name: 'Save BGP' }));

    expect(await screen.findByText('Saved as a pending change')).toBeInTheDocument();
    expect(sent).toEqual([
      {
        call: 'PUT /api/v1/bgp',
        body: {
          enabled: true,
          asn: 65010,
          router_id: '192.0.2.7',
          neighbors: [{ address: '10.0.1.254', remote_asn: 65000, description: null, bfd: true, password: 'k3y', timers: null }],
          announce: null,
          communities: [],
          large_communities: [],
        },
      },
    ]);
    expect(screen.getByText('192.0.2.7')).toBeInTheDocument(); // the saved settings, shown again
  });

  it('shows the API’s refusal at the field it names, and keeps what was typed', async () => {
    const refusal = {
      detail: [{ loc: ['body', 'neighbors', 0, 'timers', 'keepalive'], msg: '9 s must be shorter than the hold time 9 s (usually a third of it), or the session drops between two keepalives', type: 'value_error' }],
    };
    showPage({ status: 200, body: LIVE }, SETTINGS, { ...ADMIN, 'PUT /api/v1/bgp': { status: 422, body: refusal } });
    await userEvent.click(await screen.findByRole('button', { name: 'Edit BGP' }));
    const neighbor = screen.getByRole('group', { name: 'Neighbor 1' });
    await userEvent.click(within(neighbor).getByLabelText(/^Timers of its own/));
    await userEvent.clear(within(neighbor).getByLabelText('Keepalive (s)'));
    await userEvent.type(within(neighbor).getByLabelText('Keepalive (s)'), '9');
    await userEvent.click(screen.getByRole('button', { name: 'Save BGP' }));

    expect(await within(neighbor).findByText(/must be shorter than the hold time 9 s/)).toBeInTheDocument();
    expect(within(neighbor).getByLabelText('Keepalive (s)')).toHaveValue('9');
    expect(screen.queryByText('Saved as a pending change')).toBeNull();
  });

  it('asks before it removes BGP, then removes it as a pending change', async () => {
    const requests = showPage({ status: 200, body: LIVE }, SETTINGS, { ...ADMIN, 'DELETE /api/v1/bgp': { status: 204 } });
    await userEvent.click(await screen.findByRole('button', { name: 'Remove BGP' }));
    const dialog = await screen.findByRole('dialog', { name: 'Remove this node’s BGP?' });
    expect(dialog).toHaveTextContent('FRR withdraws every VIP');
    expect(requests).not.toContain('DELETE /api/v1/bgp');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Remove BGP' }));
    await waitFor(() => expect(requests).toContain('DELETE /api/v1/bgp'));
    expect(await screen.findByText(/No BGP settings on this node/)).toBeInTheDocument();
    expect(screen.getByText('Saved as a pending change')).toBeInTheDocument();
  });

  it('drains this node for an operator: asks, then puts it into maintenance, which withdraws its VIPs', async () => {
    const sent: SentBody[] = [];
    showPage({ status: 200, body: LIVE }, SETTINGS, {
      ...OPERATOR,
      'GET /api/v1/ha/status': { status: 200, body: haStatus(false) },
      'POST /api/v1/ha/maintenance': { status: 200, body: { maintenance: true, file: '/data/state/maintenance' } },
    }, sent);
    await userEvent.click(await within(await screen.findByTestId('bgp-node')).findByRole('button', { name: 'Drain this node' }));
    const dialog = await screen.findByRole('dialog', { name: 'Drain lb3?' });
    expect(dialog).toHaveTextContent('withdraws every VIP from the routers');
    expect(dialog).toHaveTextContent('pick the same backends (mh)');
    expect(sent).toEqual([]);
    await userEvent.click(within(dialog).getByRole('button', { name: 'Drain' }));
    await waitFor(() => expect(sent).toEqual([{ call: 'POST /api/v1/ha/maintenance', body: { enabled: true } }]));
  });

  it('returns a drained node to service', async () => {
    const sent: SentBody[] = [];
    showPage({ status: 200, body: { ...LIVE, announcing: false, fitness: 'the node is in maintenance', originated: [] } }, SETTINGS, {
      ...OPERATOR,
      'GET /api/v1/ha/status': { status: 200, body: haStatus(true) },
      'POST /api/v1/ha/maintenance': { status: 200, body: { maintenance: false, file: '/data/state/maintenance' } },
    }, sent);
    await userEvent.click(await screen.findByRole('button', { name: 'Return to service' }));
    const dialog = await screen.findByRole('dialog', { name: 'Return lb3 to service?' });
    await userEvent.click(within(dialog).getByRole('button', { name: 'Return to service' }));
    await waitFor(() => expect(sent).toEqual([{ call: 'POST /api/v1/ha/maintenance', body: { enabled: false } }]));
  });

  it('offers no drain to a viewer, nor where this node has no BGP to withdraw', async () => {
    const requests = showPage({ status: 200, body: LIVE }, SETTINGS, { 'GET /api/v1/ha/status': { status: 200, body: haStatus(false) } });
    expect(await screen.findByText('every enabled service’s VIP')).toBeInTheDocument();
    await waitFor(() => expect(requests).toContain('GET /api/v1/auth/me'));
    expect(screen.queryByRole('button', { name: 'Drain this node' })).toBeNull();
  });

  it.each([
    ['no BGP settings', null],
    ['announcing turned off', { ...SETTINGS, enabled: false }],
  ])('offers no drain with %s', async (_, settings) => {
    const requests = showPage({ status: 200, body: LIVE }, settings, { ...OPERATOR, 'GET /api/v1/ha/status': { status: 200, body: haStatus(false) } });
    expect(await screen.findByRole('heading', { name: 'Settings' })).toBeInTheDocument();
    await waitFor(() => expect(requests).toContain('GET /api/v1/auth/me'));
    expect(screen.queryByRole('button', { name: 'Drain this node' })).toBeNull();
    expect(requests).not.toContain('GET /api/v1/ha/status'); // the control is not there to ask
  });

  it.each([
    [3, '3 s'],
    [754, '12 min'],
    [7500, '2 h 5 min'],
    [353000, '4 d 2 h'],
  ])('tells %d seconds up as "%s"', (seconds, text) => {
    expect(upFor(seconds)).toBe(text);
  });
});
