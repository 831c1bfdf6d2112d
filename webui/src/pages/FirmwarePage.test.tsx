import { MantineProvider } from '@mantine/core';
import { ModalsProvider } from '@mantine/modals';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { FirmwareStatus, FirmwareUpgrade } from '../client/types.gen';
import { nextRestartPhase } from '../api/queries/firmware';
import { fakeApi } from '../test/fakeApi';
import { WAITING_BUNDLE as BUNDLE } from '../test/firmware';
import FirmwarePage from './FirmwarePage';

const IDLE = { operation: 'idle', progress: null, message: null, last_error: null };
const STATUS: FirmwareStatus = {
  ab_system: true,
  detail: null,
  compatible: 'fulcrum-x86_64',
  booted: 'A',
  slots: [
    { name: 'rootfs.0', bootname: 'A', device: '/dev/disk/by-partlabel/root-a', state: 'booted', boot_status: 'good', version: '1.0.0' },
    { name: 'rootfs.1', bootname: 'B', device: '/dev/disk/by-partlabel/root-b', state: 'inactive', boot_status: 'good', version: null },
  ],
  bundle: null,
  install: IDLE,
  upgrade: null,
};
const upgrade = (state: FirmwareUpgrade['state'], reason: string | null = null): FirmwareUpgrade => ({
  version: '2.0.0',
  from_slot: 'A',
  to_slot: 'B',
  state,
  reason,
  started_at: '2026-03-01T12:00:00Z',
  updated_at: '2026-03-01T12:05:00Z',
});

function showPage() {
  const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  render(
    <MantineProvider>
      <QueryClientProvider client={queryClient}>
        <ModalsProvider>
          <FirmwarePage />
        </ModalsProvider>
      </QueryClientProvider>
    </MantineProvider>,
  );
}

describe('FirmwarePage', () => {
  it.each([
    ['installing', 'Installing 2.0.0 into slot B…', null],
    ['install_failed', 'Installing 2.0.0 failed; the running system was not touched', 'Failed mounting bundle: no device-mapper'],
    ['installed', '2.0.0 is installed in slot B. It runs after a restart.', null],
    ['cancelled', 'The upgrade to 2.0.0 was cancelled before the restart', 'cancelled by admin before the restart: slot A stays the one to boot'],
    ['good', 'Upgraded to 2.0.0 (slot B is good)', null],
    ['failed', '2.0.0 was found unhealthy and is being rolled back', 'fulcrum-api.service did not start'],
    ['rolled_back', 'The upgrade to 2.0.0 failed and was rolled back to slot A', 'fulcrum-api.service restarted 5 times'],
  ] as const)('tells the upgrade %s as "%s", with the reason and the dates', async (state, headline, reason) => {
    fakeApi({ 'GET /api/v1/firmware': { status: 200, body: { ...STATUS, upgrade: upgrade(state, reason) } } });
    showPage();
    const outcome = await screen.findByRole('alert', { name: headline });
    if (reason) expect(outcome).toHaveTextContent(reason);
    const card = screen.getByTestId('upgrade');
    expect(card).toHaveTextContent(/Started.*2026/);
    expect(card).toHaveTextContent(/Last change.*2026/);
    expect(within(card).queryAllByRole('button', { name: 'Restart now' })).toHaveLength(state === 'installed' ? 1 : 0);
    expect(within(card).queryAllByRole('button', { name: 'Cancel the upgrade' })).toHaveLength(state === 'installed' ? 1 : 0);
  });

  it('cancels an installed upgrade when asked, and shows the running slot booting next again', async () => {
    const reason = 'cancelled by admin before the restart: slot A stays the one to boot; slot B keeps 2.0.0 until the next install';
    const cancelled = { ...STATUS, primary: 'A', upgrade: upgrade('cancelled', reason) };
    const requests = fakeApi({
      'GET /api/v1/firmware': { status: 200, body: { ...STATUS, primary: 'B', upgrade: upgrade('installed') } },
      'POST /api/v1/firmware/cancel': { status: 200, body: cancelled },
    });
    showPage();
    expect(within(await screen.findByTestId('slot-rootfs.1')).getByText('boots next')).toBeVisible();
    await userEvent.click(await screen.findByRole('button', { name: 'Cancel the upgrade' }));

    const dialog = await screen.findByRole('dialog', { name: 'Cancel the upgrade to 2.0.0?' });
    expect(dialog).toHaveTextContent('Slot A, running now, becomes the one to boot again');
    expect(requests).not.toContain('POST /api/v1/firmware/cancel');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Keep this version' }));

    expect(await screen.findByRole('alert', { name: 'The upgrade to 2.0.0 was cancelled before the restart' })).toHaveTextContent(reason);
    expect(within(screen.getByTestId('slot-rootfs.0')).getByText('boots next')).toBeVisible();
    expect(within(screen.getByTestId('slot-rootfs.1')).queryByText('boots next')).toBeNull();
    expect(screen.queryByRole('button', { name: 'Restart now' })).toBeNull();
    expect(requests.filter((call) => call === 'POST /api/v1/firmware/cancel')).toHaveLength(1);
  });

  it('asks before it installs, names the slot, then installs and shows RAUC’s progress', async () => {
    const installing = {
      ...STATUS,
      bundle: BUNDLE,
      install: { operation: 'installing', progress: 40, message: 'Copying image to rootfs.1', last_error: null },
      upgrade: upgrade('installing'),
    };
    const requests = fakeApi({
      'GET /api/v1/firmware': { status: 200, body: { ...STATUS, bundle: BUNDLE } },
      'POST /api/v1/firmware/install': { status: 202, body: installing },
    });
    showPage();
    await userEvent.click(await screen.findByRole('button', { name: 'Install' }));

    const dialog = await screen.findByRole('dialog', { name: 'Install 2.0.0 into slot B?' });
    expect(dialog).toHaveTextContent('This node keeps serving from slot A while it does');
    expect(requests).not.toContain('POST /api/v1/firmware/install');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Install' }));

    expect(await screen.findByRole('alert', { name: 'Installing 2.0.0 into slot B…' })).toHaveTextContent('40%: Copying image to rootfs.1');
    expect(screen.getByRole('progressbar', { name: 'Install progress' })).toHaveAttribute('aria-valuenow', '40');
    expect(requests.filter((call) => call === 'POST /api/v1/firmware/install')).toHaveLength(1);
    expect(within(screen.getByTestId('waiting-bundle')).getByRole('button', { name: 'Install' })).toBeDisabled(); // RAUC is busy: no second install
  });

  it('shows an install started on the console, and offers no second one meanwhile', async () => {
    const busy = { operation: 'installing', progress: 70, message: 'Copying image to rootfs.1', last_error: null };
    fakeApi({ 'GET /api/v1/firmware': { status: 200, body: { ...STATUS, bundle: BUNDLE, install: busy, upgrade: upgrade('good') } } });
    showPage();
    const notice = await screen.findByRole('alert', { name: 'RAUC is installing a bundle that was not started from the dashboard' });
    expect(notice).toHaveTextContent('70%: Copying image to rootfs.1');
    expect(within(screen.getByTestId('waiting-bundle')).getByRole('button', { name: 'Install' })).toBeDisabled();
  });

  it('shows why the node was not restarted', async () => {
    const refusal = 'the node was not restarted: this node has no reboot command (reboot_command is empty)';
    const requests = fakeApi({
      'GET /api/v1/firmware': { status: 200, body: { ...STATUS, upgrade: upgrade('installed') } },
      'POST /api/v1/firmware/reboot': { status: 409, body: { detail: refusal } },
    });
    showPage();
    await userEvent.click(await screen.findByRole('button', { name: 'Restart now' }));

    const dialog = await screen.findByRole('dialog', { name: 'Restart this node now?' });
    expect(dialog).toHaveTextContent('restarts into slot B and is gone for a few minutes');
    expect(dialog).toHaveTextContent('its peer takes over');
    await userEvent.click(within(dialog).getByRole('button', { name: 'Restart now' }));

    expect(await screen.findByText(refusal)).toBeVisible();
    expect(requests).toContain('POST /api/v1/firmware/reboot');
  });

  it('follows the node through its restart, then shows the boot check\'s verdict', async () => {
    const answers: Record<string, { status: number; body?: unknown }> = {
      'GET /api/v1/firmware': { status: 200, body: { ...STATUS, upgrade: upgrade('installed') } },
      'POST /api/v1/firmware/reboot': { status: 202 },
      'GET /api/v1/health': { status: 200, body: { status: 'ok' } },
    };
    fakeApi(answers);
    showPage();
    await userEvent.click(await screen.findByRole('button', { name: 'Restart now' }));
    await userEvent.click(within(await screen.findByRole('dialog', { name: 'Restart this node now?' })).getByRole('button', { name: 'Restart now' }));
    const watch = await screen.findByTestId('restart-watch');
    expect(watch).toHaveAttribute('data-phase', 'going_down');

    answers['GET /api/v1/health'] = { status: 503 }; // gone
    await waitFor(() => expect(screen.getByTestId('restart-watch')).toHaveAttribute('data-phase', 'down'), { timeout: 8_000 });
    expect(screen.getByTestId('restart-watch')).toHaveTextContent('The node is down, starting slot B');

    answers['GET /api/v1/health'] = { status: 200, body: { status: 'ok' } }; // back, and judged good
    answers['GET /api/v1/firmware'] = { status: 200, body: { ...STATUS, booted: 'B', upgrade: upgrade('good') } };
    expect(await screen.findByText('Upgraded to 2.0.0 (slot B is good)', {}, { timeout: 8_000 })).toBeVisible();
    expect(screen.queryByTestId('restart-watch')).toBeNull();
  }, 20_000);
});

describe('nextRestartPhase', () => {
  it('waits for the node to go, then to come back, and stays back', () => {
    expect(nextRestartPhase('going_down', true)).toBe('going_down');
    expect(nextRestartPhase('going_down', false)).toBe('down');
    expect(nextRestartPhase('down', false)).toBe('down');
    expect(nextRestartPhase('down', true)).toBe('back');
    expect(nextRestartPhase('back', false)).toBe('back');
  });
});
