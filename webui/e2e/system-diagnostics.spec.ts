import { expect, test } from '@playwright/test';
import { ADMIN, login, nav, shoot } from './helpers';
import { A_PORT } from './ports';

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
  await expect(page.getByRole('heading', { name: 'Diagnostics', exact: true })).toBeVisible();

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

test('logs: this host runs no journal, and the page says so', async ({ page }) => {
  await login(page, ADMIN);
  await nav(page, 'Logs');
  await expect(page.getByRole('heading', { name: 'Logs', exact: true })).toBeVisible();
  await expect(page.getByText(/no journal on this node/)).toBeVisible();
  await expect(page.getByRole('link', { name: 'Download as text' })).toHaveAttribute('href', /\/api\/v1\/logs\/download\?priority=7/);
  await shoot(page, 'logs');
});
