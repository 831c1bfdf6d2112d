import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { MemoryRouter } from 'react-router';
import '../../api/http';
import type { HaStatus, Me } from '../../client/types.gen';
import { fakeApi } from '../../test/fakeApi';
import { ClusterMembershipCard } from './ClusterMembershipCard';

const admin: Me = { id: 1, username: 'admin', role: 'admin', disabled: false, created_at: '2026-12-01T00:00:00Z', client_address: '192.0.2.99' };

const member = {
  cluster: 'member',
  node: { name: 'lb2', role: 'active', groups: [], maintenance: false, writer: false, priority: 100, certificate: null, software_version: '0.1.0', config_schema: 1 },
  peer: { name: 'lb1', url: 'https://10.0.0.1', reachable: true, role: 'active', groups: [], writer: true },
} as unknown as HaStatus;

function show(status: HaStatus) {
  const requests = fakeApi({ 'GET /api/v1/auth/me': { status: 200, body: admin }, 'DELETE /api/v1/ha/pair': { status: 200, body: { peer: 'told the peer' } } });
  render(
    <MantineProvider>
      <QueryClientProvider client={new QueryClient({ defaultOptions: { queries: { retry: false } } })}>
        <ModalsProvider>
          <MemoryRouter>
            <ClusterMembershipCard status={status} />
          </MemoryRouter>
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>,
  );
  return requests;
}

describe('ClusterMembershipCard', () => {
  it('on a member: names the writer, and leaving asks first, then unpairs', async () => {
    const requests = show(member);
    expect(screen.getByTestId('cluster-membership')).toHaveTextContent('A member of the cluster led by lb1 at https://10.0.0.1');
    await userEvent.click(await screen.findByRole('button', { name: 'Leave the cluster' }));
    const dialog = await screen.findByRole('dialog', { name: 'Leave the cluster led by lb1?' });
    expect(within(dialog).getByText(/keeps running and announcing what it runs now/)).toBeInTheDocument();
    expect(requests).not.toContain('DELETE /api/v1/ha/pair');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Leave the cluster' }));
    await waitFor(() => expect(requests).toContain('DELETE /api/v1/ha/pair'));
  });

  it('on the writer: where its members are run, and nothing to leave', async () => {
    show({ ...member, cluster: 'writer', peer: null });
    expect(screen.getByTestId('cluster-membership')).toHaveTextContent('This node leads a cluster');
    await screen.findByText(/This node leads a cluster/);
    expect(screen.queryByRole('button', { name: 'Leave the cluster' })).toBeNull();
  });
});
