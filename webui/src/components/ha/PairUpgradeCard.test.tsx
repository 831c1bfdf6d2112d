import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { MemoryRouter } from 'react-router';
import type { FirmwareStatus, GroupState, HaStatus, PairUpgrade, Role } from '../../client/types.gen';
import { fakeApi, type FakeAnswers } from '../../test/fakeApi';
import { WAITING_BUNDLE as BUNDLE } from '../../test/firmware';
import { PairUpgradeCard } from './PairUpgradeCard';

const GROUP: GroupState = { name: 'front', state: 'MASTER', since: '2026-03-01T12:00:00Z' };
const ACTIVE: HaStatus = {
  node: { name: 'lb1', role: 'active', groups: [GROUP], maintenance: false, writer: true, priority: 150, certificate: null, software_version: '1.0.0', config_schema: 1 },
  peer: {
    name: 'lb2',
    url: 'https://10.0.0.2',
    reachable: true,
    last_seen: '2026-03-01T12:00:00Z',
    unreachable_since: null,
    role: 'standby',
    groups: [{ ...GROUP, state: 'BACKUP' }],
    applied_revision: 3,
    writer: false,
    certificate: null,
    untrusted_certificate: null,
    clock_offset: null,
    software_version: '1.0.0',
    protocol: 3,
    config_schema: 1,
  },
  sync: { state: 'in_sync', local_revision: 3, local_hash: 'a', peer_revision: 3, peer_hash: 'a', since: null, message: '' },
  conn_sync: { enabled: true, interface: 'eth1', local_daemon: 'master', local_connections: 40, peer_connections: 41 },
  split_brain: { active: false, since: null, groups: [], holding: false },
  active: { name: 'lb1', local: true, url: null, split_brain: false },
  transitions: [],
};
const STANDBY: HaStatus = { ...ACTIVE, node: { ...ACTIVE.node, role: 'standby', writer: false } };
const FIRMWARE: FirmwareStatus = { ab_system: true, detail: null, compatible: 'fulcrum-x86_64', booted: 'A', slots: [], bundle: BUNDLE, install: null, upgrade: null };
const NAMES = ['send_bundle', 'install_peer', 'restart_peer', 'install_self', 'hand_over', 'restart_self', 'rejoin'] as const;

function record(state: PairUpgrade['state'], steps: Partial<Record<(typeof NAMES)[number], [string, string?]>>, message: string | null = null): PairUpgrade {
  return {
    version: '2.0.0',
    node: 'lb1',
    peer: 'lb2',
    started_by: 'admin',
    state,
    steps: NAMES.map((name) => {
      const [stepState, detail] = steps[name] ?? ['pending'];
      return { name, state: stepState as PairUpgrade['steps'][number]['state'], detail: detail ?? null, started_at: null, ended_at: null, requested_at: null };
    }),
    started_at: '2026-03-01T12:00:00Z',
    updated_at: '2026-03-01T12:05:00Z',
    message,
    boot_id: null,
  };
}

function showCard(status: HaStatus, answers: FakeAnswers, role: Role = 'admin') {
  const requests = fakeApi({
    'GET /api/v1/auth/me': { status: 200, body: { id: 1, username: 'someone', role, disabled: false, created_at: '2026-03-01T12:00:00Z', client_address: '127.0.0.1' } },
    'GET /api/v1/firmware': { status: 200, body: FIRMWARE },
    ...answers,
  });
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <MantineProvider>
      <QueryClientProvider client={queryClient}>
        <ModalsProvider>
          <MemoryRouter>
            <PairUpgradeCard status={status} />
          </MemoryRouter>
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>,
  );
  // Every query answered: what the card leaves out is left out for good, not not yet there.
  const settled = () => waitFor(() => expect(queryClient.isFetching()).toBe(0));
  return { requests, settled };
}

describe('PairUpgradeCard', () => {
  it('asks before it upgrades the pair, saying the standby goes first and the VIPs move once, then follows the steps', async () => {
    const { requests } = showCard(ACTIVE, {
      'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: null } },
      'POST /api/v1/ha/upgrade': { status: 202, body: { upgrade: record('running', { send_bundle: ['running'] }) } },
    });
    const button = await screen.findByRole('button', { name: 'Upgrade the pair to 2.0.0' });
    expect(screen.getByTestId('pair-upgrade')).toHaveTextContent('Bundle 2.0.0 is waiting on lb1. lb1 runs 1.0.0, lb2 1.0.0.');
    await userEvent.click(button);

    const dialog = await screen.findByRole('dialog', { name: 'Upgrade lb2 and lb1 to 2.0.0?' });
    expect(dialog).toHaveTextContent('lb2 is upgraded and restarted first, while lb1 keeps serving');
    expect(dialog).toHaveTextContent('the one failover');
    expect(requests).not.toContain('POST /api/v1/ha/upgrade');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Upgrade the pair' }));

    expect(await screen.findByTestId('pair-upgrade-state')).toHaveTextContent('upgrading to 2.0.0');
    const steps = screen.getByTestId('pair-upgrade-steps');
    expect(within(steps).getAllByRole('row').map((row) => row.getAttribute('data-state'))).toEqual(['running', 'pending', 'pending', 'pending', 'pending', 'pending', 'pending']);
    expect(steps).toHaveTextContent('Hand the VIPs over to lb2 (the one failover)');
    expect(requests.filter((call) => call === 'POST /api/v1/ha/upgrade')).toHaveLength(1);
    expect(screen.queryByRole('button', { name: /^Upgrade the pair to/ })).toBeNull(); // no second one while it runs
  });

  it('shows where a failed upgrade stopped and why, and offers it again', async () => {
    const reason = 'lb2’s new system was not healthy and went back to slot A: fulcrum-api.service did not start; lb1 was not touched and keeps the VIPs';
    showCard(ACTIVE, {
      'GET /api/v1/ha/upgrade': {
        status: 200,
        body: { upgrade: record('failed', { send_bundle: ['done', 'lb2 checked the bundle'], install_peer: ['done'], restart_peer: ['failed', reason] }, `restart peer failed: ${reason}`) },
      },
    });
    expect(await screen.findByTestId('pair-upgrade-state')).toHaveTextContent('failed');
    const failed = screen.getByTestId('pair-upgrade-steps').querySelector('[data-step="restart_peer"]');
    expect(failed).toHaveAttribute('data-state', 'failed');
    expect(failed).toHaveTextContent(reason);
    expect(await screen.findByRole('button', { name: 'Upgrade the pair to 2.0.0' })).toBeEnabled();
  });

  it('stops a running upgrade after asking, and says it is stopping', async () => {
    const running = record('running', { send_bundle: ['done'], install_peer: ['running', 'lb2: installing (40 %)'] });
    const { requests } = showCard(ACTIVE, {
      'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: running } },
      'POST /api/v1/ha/upgrade/stop': { status: 202, body: { upgrade: { ...running, stop_requested_by: 'admin' } } },
    });
    await userEvent.click(await screen.findByRole('button', { name: 'Stop the upgrade' }));
    const dialog = await screen.findByRole('dialog', { name: 'Stop the upgrade to 2.0.0?' });
    expect(dialog).toHaveTextContent('what is under way (the bundle streaming, an install, a restart) runs to its end');
    expect(requests).not.toContain('POST /api/v1/ha/upgrade/stop');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Stop the upgrade' }));
    expect(await screen.findByTestId('pair-upgrade-state')).toHaveTextContent('stopping (asked by admin)');
    expect(within(screen.getByTestId('pair-upgrade')).queryByRole('button', { name: 'Stop the upgrade' })).toBeNull(); // asked once
    expect(requests.filter((call) => call === 'POST /api/v1/ha/upgrade/stop')).toHaveLength(1);
  });

  it('shows a stopped upgrade with the step it stopped at, and offers it again', async () => {
    const message = 'stopped by admin during install peer; lb2 has 2.0.0 installed, to boot at the next restart (System → Firmware on that node cancels it)';
    showCard(ACTIVE, {
      'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: record('stopped', { send_bundle: ['done'], install_peer: ['stopped'] }, message) } },
    });
    expect(await screen.findByTestId('pair-upgrade-state')).toHaveTextContent('stopped');
    expect(screen.getByTestId('pair-upgrade-steps').querySelector('[data-step="install_peer"]')).toHaveAttribute('data-state', 'stopped');
    expect(screen.getByTestId('pair-upgrade')).toHaveTextContent(message);
    expect(await screen.findByRole('button', { name: 'Upgrade the pair to 2.0.0' })).toBeEnabled();
    expect(screen.queryByRole('button', { name: 'Stop the upgrade' })).toBeNull();
  });

  it('shows the API’s refusal when the pair is not ready', async () => {
    const refusal = 'the pair is not in sync (peer_behind): both nodes must run the same revision';
    showCard(ACTIVE, {
      'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: null } },
      'POST /api/v1/ha/upgrade': { status: 409, body: { detail: refusal } },
    });
    await userEvent.click(await screen.findByRole('button', { name: 'Upgrade the pair to 2.0.0' }));
    await userEvent.click(within(await screen.findByRole('dialog')).getByRole('button', { name: 'Upgrade the pair' }));
    expect(await screen.findByRole('alert', { name: 'The pair upgrade did not start' })).toHaveTextContent(refusal);
  });

  it('points to the firmware page when no bundle waits', async () => {
    const { settled } = showCard(ACTIVE, { 'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: null } }, 'GET /api/v1/firmware': { status: 200, body: { ...FIRMWARE, bundle: null } } });
    expect(await screen.findByRole('link', { name: 'Firmware' })).toHaveAttribute('href', '/system/firmware');
    await settled();
    expect(screen.queryByRole('button', { name: /Upgrade the pair/ })).toBeNull();
  });

  it('says why a node that is not an A/B system cannot be upgraded', async () => {
    const detail = 'not an A/B system: /etc/rauc/system.conf does not exist';
    const { settled } = showCard(ACTIVE, {
      'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: null } },
      'GET /api/v1/firmware': { status: 200, body: { ...FIRMWARE, ab_system: false, detail, bundle: null } },
    });
    expect(await screen.findByTestId('pair-upgrade-not-ab')).toHaveTextContent(`lb1 cannot be upgraded here: ${detail}`);
    await settled();
    expect(screen.queryByRole('button', { name: /Upgrade the pair/ })).toBeNull();
  });

  it('offers no upgrade to an operator', async () => {
    const { settled } = showCard(ACTIVE, { 'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: null } } }, 'operator');
    expect(await screen.findByTestId('pair-upgrade')).toHaveTextContent('lb2 first, then one failover to it, then lb1');
    await settled();
    expect(screen.queryByRole('button', { name: /Upgrade the pair/ })).toBeNull();
  });

  it('on the standby, follows the upgrade its peer drives, saying who drives it and when it last reported', async () => {
    const driven = { ...record('running', { send_bundle: ['done'], install_peer: ['done'], restart_peer: ['done'], install_self: ['done'], hand_over: ['done'], restart_self: ['running', 'lb2 is restarting'] }), node: 'lb2', peer: 'lb1' };
    const { settled } = showCard(STANDBY, { 'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: null, peer_upgrade: driven, peer_seen_at: '2026-03-01T12:06:00Z' } } });
    expect(await screen.findByTestId('pair-upgrade-driven-by')).toHaveTextContent(/^Driven by lb2, as it last reported at .+; it is away while it restarts/);
    expect(screen.queryByRole('button', { name: 'Stop the upgrade' })).toBeNull(); // it is stopped on lb2
    const card = screen.getByTestId('pair-upgrade');
    expect(card).toHaveTextContent('lb1 first, then one failover to it, then lb2');
    expect(screen.getByTestId('pair-upgrade-state')).toHaveTextContent('upgrading to 2.0.0');
    expect(card.querySelector('[data-step="restart_self"]')).toHaveTextContent('Restart lb2 into the new version');
    await settled();
    expect(screen.queryByRole('button', { name: /Upgrade the pair/ })).toBeNull();
  });

  it('offers no upgrade of its own on the active node while the peer’s runs (after the hand-over)', async () => {
    const driven = { ...record('running', { hand_over: ['done'], restart_self: ['running'] }), node: 'lb2', peer: 'lb1' };
    const { settled } = showCard(ACTIVE, { 'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: null, peer_upgrade: driven, peer_seen_at: null } } });
    expect(await screen.findByTestId('pair-upgrade-driven-by')).toHaveTextContent('Driven by lb2; it is away while it restarts');
    await settled();
    expect(screen.queryByRole('button', { name: /Upgrade the pair/ })).toBeNull();
  });

  it('is absent on a standby that drove no upgrade', async () => {
    const { settled } = showCard(STANDBY, { 'GET /api/v1/ha/upgrade': { status: 200, body: { upgrade: null } } });
    await settled();
    expect(screen.queryByTestId('pair-upgrade')).toBeNull();
  });
});
