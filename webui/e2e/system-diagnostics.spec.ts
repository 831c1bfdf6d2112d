import { expect, test } from '@playwright/test';
import { ADMIN, login, nav, shoot } from './helpers';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { A_JOURNAL_DIR, A_PORT } from './ports';

test.describe.configure({ mode: 'serial' });

test.beforeAll(async ({ request }) => {
  // Runs alone or after the other specs: the admin exists already then (409), which is fine.
  const response = await request.post('/api/v1/setup', { data: ADMIN });
  expect([201, 409]).toContain(response.status());
});

test('diagnostics: ping loopback, connect to the API itself, a hostile host refused at its field', async ({ page }) => {
  test.slow(); // ping takes a second per echo, on 2 shared cores
  await login(page, ADMIN);
  await nav(page, 'Diagnostics');

  const ping = page.getByRole('region', { name: 'Ping' });
  await ping.getByLabel('Host').fill('127.0.0.1');
  await ping.getByLabel('Count').fill('2');
  await ping.getByRole('button', { name: 'Ping' }).click();
  await expect(ping.getByTestId('tool-output')).toContainText('2 packets transmitted, 2 received', { timeout: 20_000 });
  await expect(ping).toContainText('exit 0');

  const tcp = page.getByRole('region', { name: 'TCP connect' });
  await tcp.getByLabel('Host').fill('127.0.0.1');
  await tcp.getByLabel('Port').fill(String(A_PORT));
  await tcp.getByRole('button', { name: 'Connect' }).click();
  await expect(tcp.getByTestId('tcp-result')).toContainText(new RegExp(`connected\\s*127\\.0\\.0\\.1:${A_PORT}`));

  // Option injection: the API refuses it, and the form shows why at the Host field.
  await ping.getByLabel('Host').fill('-f');
  await ping.getByRole('button', { name: 'Ping' }).click();
  await expect(ping.getByText("a host must not start with '-' (it would be read as an option)")).toBeVisible();
  await tcp.getByLabel('Host').fill('127.0.0.1; reboot');
  await tcp.getByRole('button', { name: 'Connect' }).click();
  await expect(tcp.getByText('expected an IP address or a DNS name such as backend1.example.com')).toBeVisible();
  await shoot(page, 'diagnostics-tools');

  // The read-only tables: this host's kernel has no IPVS, which the page says.
  await page.getByRole('tab', { name: 'IPVS connections' }).click();
  await expect(page.getByText(/no IPVS connection table on this node/)).toBeVisible();
  await page.getByRole('tab', { name: 'Neighbours' }).click();
  await expect(page.getByRole('table', { name: 'Neighbours' })).toBeVisible();
  await shoot(page, 'diagnostics-neighbours', { phone: false });

  // A capture filter with a shell metacharacter is refused at the filter.
  await page.getByRole('tab', { name: 'Packet capture' }).click();
  await page.getByRole('textbox', { name: 'Interface' }).click();
  await page.getByRole('option', { name: 'lo', exact: true }).click();
  await page.getByLabel('Filter').fill('icmp; reboot');
  await page.getByRole('button', { name: 'Capture' }).click();
  await expect(page.getByText(/use a BPF filter of words, numbers/)).toBeVisible();
  await page.getByRole('tab', { name: 'Support bundle' }).click();
  await expect(page.getByRole('link', { name: 'Download the support bundle' })).toHaveAttribute('href', '/api/v1/diagnostics/support-bundle');
  await shoot(page, 'diagnostics-capture', { phone: false });
});

// This host runs no journald: the spec writes a real journal file with systemd-journal-remote into
// the directory the API reads (FULCRUM_JOURNAL_DIRECTORY, playwright.config.ts).
const JOURNAL_REMOTE = '/lib/systemd/systemd-journal-remote';

function writeJournal(entries: { unit?: string; transport?: string; priority: number; message: string }[]) {
  const now = Date.now() * 1000;
  const exported = entries
    .map((entry, index) => {
      const fields = [
        `__REALTIME_TIMESTAMP=${now + index}`,
        `__MONOTONIC_TIMESTAMP=${now + index}`,
        '_BOOT_ID=0123456789abcdef0123456789abcdef',
        `PRIORITY=${entry.priority}`,
        `MESSAGE=${entry.message}`,
      ];
      if (entry.unit) fields.push(`_SYSTEMD_UNIT=${entry.unit}`);
      if (entry.transport) fields.push(`_TRANSPORT=${entry.transport}`);
      return fields.join('\n') + '\n\n';
    })
    .join('');
  execFileSync(JOURNAL_REMOTE, [`--output=${A_JOURNAL_DIR}/system.journal`, '-'], { input: exported, stdio: ['pipe', 'ignore', 'ignore'] });
}

test('logs: the journal filtered by source and text, live-tailed, downloadable', async ({ page }) => {
  test.skip(!existsSync(JOURNAL_REMOTE), 'needs systemd-journal-remote (scripts/setup-host installs it)');
  rmSync(A_JOURNAL_DIR, { recursive: true, force: true });
  mkdirSync(A_JOURNAL_DIR);
  writeJournal([
    { unit: 'fulcrum-keepalived.service', priority: 6, message: 'VRRP_Instance(VI_1) Entering MASTER STATE' },
    { transport: 'kernel', priority: 6, message: 'IPVS: Creating netns size=2048 id=0' },
    { unit: 'fulcrum-keepalived.service', priority: 3, message: 'TCP check on [198.51.100.1]:80 failed' },
    { unit: 'cron.service', priority: 6, message: 'not an appliance unit' },
  ]);
  await login(page, ADMIN);
  await nav(page, 'Logs');
  const rows = page.getByRole('table', { name: 'Log entries' }).locator('tbody tr');
  await expect(rows).toHaveCount(3);
  await expect(rows.first()).toContainText('TCP check on [198.51.100.1]:80 failed');
  await expect(rows.first()).toContainText('error');
  await shoot(page, 'logs');

  await page.getByLabel('Text', { exact: true }).fill('master');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('Entering MASTER STATE');
  await expect(page.getByRole('link', { name: 'Download as text' })).toHaveAttribute('href', /\/api\/v1\/logs\/download\?priority=7&text=master/);
  await page.getByLabel('Text', { exact: true }).fill('');
  await page.getByRole('textbox', { name: 'Sources' }).click();
  await page.getByRole('option', { name: 'Kernel' }).click();
  await page.keyboard.press('Escape');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('IPVS: Creating netns');

  // Live tail: an entry written now shows up without reloading. (The Kernel pill covers the input.)
  await page.getByRole('textbox', { name: 'Sources' }).click({ force: true });
  await page.getByRole('option', { name: 'API' }).click();
  await page.keyboard.press('Escape');
  await page.getByLabel('Live tail').check();
  await expect(page.getByText('Waiting for new entries…')).toBeVisible();
  writeJournal([{ unit: 'fulcrum-api.service', priority: 5, message: 'revision 7 committed by admin' }]);
  await expect(rows.first()).toContainText('revision 7 committed by admin', { timeout: 15_000 });
});

test('navigation: the System group is unfolded on its pages, folds on request, and shows in the phone menu', async ({ page }) => {
  await login(page, ADMIN);
  const navigation = page.getByRole('navigation', { name: 'Main navigation' });
  const system = navigation.getByRole('button', { name: 'System' });
  await expect(system).toHaveAttribute('aria-expanded', 'false');
  await expect(navigation.getByRole('link', { name: 'Logs' })).toBeHidden();

  // Opened by its address, the page unfolds its group and is the current entry.
  await page.goto('/system/diagnostics');
  await expect(page.getByRole('heading', { name: 'Diagnostics', exact: true })).toBeVisible();
  await expect(system).toHaveAttribute('aria-expanded', 'true');
  await expect(navigation.getByRole('link', { name: 'Diagnostics' })).toHaveAttribute('aria-current', 'page');
  await shoot(page, 'nav-system', { phone: false });
  await system.click();
  await expect(system).toHaveAttribute('aria-expanded', 'false');
  await expect(navigation.getByRole('link', { name: 'Diagnostics' })).toBeHidden();

  // On a phone the navigation is behind the burger; the group unfolds there the same way.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole('button', { name: 'Toggle navigation' }).click();
  await nav(page, 'Backup');
  await page.getByRole('button', { name: 'Toggle navigation' }).click();
  await expect(navigation.getByRole('link', { name: 'Backup' })).toHaveAttribute('aria-current', 'page');
  await shoot(page, 'nav-phone', { phone: false });
});
