import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import '../../api/http';
import type { HaStatus, Me } from '../../client/types.gen';
import { fakeApi } from '../../test/fakeApi';
import { HandOverActions } from './HandOverActions';

const operator: Me = { id: 2, username: 'ops', role: 'operator', disabled: false, created_at: '2026-12-01T00:00:00Z', client_address: '192.0.2.99' };

const node = { name: 'lb2', role: 'active', groups: [], maintenance: false, writer: false, priority: 100, certificate: null, software_version: '0.1.0', config_schema: 1 };
const peer = { name: 'lb1', url: 'https://10.0.0.1', reachable: true, role: 'standby', groups: [], writer: true };

function show(status: HaStatus) {
  fakeApi({ 'GET /api/v1/auth/me': { status: 200, body: operator } });
  render(
    <MantineProvider>
      <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
        <ModalsProvider>
          <HandOverActions status={status} />
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>,
  );
}

describe('HandOverActions', () => {
  it("offers a pair's active node maintenance and the failover drill", async () => {
    show({ cluster: 'none', node, peer } as unknown as HaStatus);
    expect(await screen.findByRole('button', { name: 'Failover drill…' })).toBeInTheDocument();
    await userEvent.click(screen.getByRole('button', { name: 'Maintenance…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Put lb2 into maintenance?' });
    expect(within(dialog).getByText(/lb1 takes them over/)).toBeInTheDocument();
  });

  it('offers a cluster member no VRRP hand-over or drill, and says maintenance withdraws its routes', async () => {
    show({ cluster: 'member', node, peer: { ...peer, role: 'active' } } as unknown as HaStatus);
    await userEvent.click(await screen.findByRole('button', { name: 'Maintenance…' }));
    const dialog = await screen.findByRole('dialog', { name: 'Put lb2 into maintenance?' });
    expect(within(dialog).getByText(/withdraws its routes: the router moves its flows to the cluster's other nodes/)).toBeInTheDocument();
    expect(screen.queryByRole('button', { name: 'Failover drill…' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Make this node active…' })).toBeNull();
  });
});
