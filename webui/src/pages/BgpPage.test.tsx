import { MantineProvider } from '@mantine/core';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, screen, within } from '@testing-library/react';
import '../api/http'; // the client as the app configures it: a refusal is thrown as an ApiError
import type { BgpRead, BgpView } from '../client/types.gen';
import { fakeApi } from '../test/fakeApi';
import BgpPage, { upFor } from './BgpPage';

const SETTINGS: BgpRead = {
  asn: 65001,
  router_id: '192.0.2.5',
  neighbors: [{ address: '10.0.1.254', remote_asn: 65000, has_password: false, bfd: true, description: null, timers: null }],
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
    { address: '10.0.1.254', remote_asn: 65000, state: 'Established', up_seconds: 7384, prefixes_sent: 1, last_reset: null, bfd: 'up' },
    { address: '10.0.2.254', remote_asn: 65000, state: 'Active', up_seconds: null, prefixes_sent: 0, last_reset: 'BFD down received', bfd: 'down' },
  ],
  error: null,
};

function showPage(status: { status: number; body: unknown }, settings: BgpRead | null = SETTINGS) {
  fakeApi({ 'GET /api/v1/bgp/status': status, 'GET /api/v1/bgp': { status: 200, body: settings } });
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <MantineProvider>
      <QueryClientProvider client={queryClient}>
        <BgpPage />
      </QueryClientProvider>
    </MantineProvider>,
  );
}

describe('BgpPage', () => {
  it('shows what this node announces, each session with its BFD, and the settings', async () => {
    showPage({ status: 200, body: LIVE });
    const node = await screen.findByTestId('bgp-node');
    expect(within(node).getByText('announcing')).toBeInTheDocument();
    expect(screen.getByTestId('bgp-originated')).toHaveTextContent('Originates 192.0.2.10/32');
    const rows = within(screen.getByRole('table', { name: 'BGP sessions' })).getAllByRole('row').slice(1);
    expect(rows.map((row) => Array.from(row.querySelectorAll('td'), (cell) => cell.textContent))).toEqual([
      ['10.0.1.254', '65000', 'Established', '2 h 3 min', '1', 'up', '—'],
      ['10.0.2.254', '65000', 'Active', '—', '0', 'down', 'BFD down received'],
    ]);
    expect(await screen.findByText('every enabled service’s VIP')).toBeInTheDocument();
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

  it.each([
    [3, '3 s'],
    [754, '12 min'],
    [7500, '2 h 5 min'],
    [353000, '4 d 2 h'],
  ])('tells %d seconds up as "%s"', (seconds, text) => {
    expect(upFor(seconds)).toBe(text);
  });
});
