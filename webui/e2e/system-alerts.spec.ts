import { expect, test } from '@playwright/test';
import { createSocket, type Socket } from 'node:dgram';
import { createServer } from 'node:net';
import { writeFileSync } from 'node:fs';
import { ADMIN, login, nav, shoot } from './helpers';
import { A_NOTIFY_FIFO } from './ports';

test.describe.configure({ mode: 'serial' });

// A real syslog receiver (UDP) in the test process: what the appliance sends lands here.
let receiver: Socket;
let receiverPort = 0;
const lines: string[] = [];

/** A local port with nothing listening: a webhook there fails for real. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test.beforeAll(async ({ request }) => {
  // Runs alone or after the other specs: the admin exists already then (409), which is fine.
  const response = await request.post('/api/v1/setup', { data: ADMIN });
  expect([201, 409]).toContain(response.status());
  receiver = createSocket('udp4');
  receiver.on('message', (message) => lines.push(message.toString()));
  await new Promise<void>((resolve) => receiver.bind(0, '127.0.0.1', resolve));
  receiverPort = receiver.address().port;
});

test.afterAll(() => receiver.close());

test('alerts: a hostile URL at its field, a syslog channel tested, a rule, then a real event delivered', async ({ page }) => {
  test.slow(); // the dispatcher polls every 2 s and the page every 5 s, on 2 shared cores
  await login(page, ADMIN);
  await nav(page, 'Alerts');

  // A webhook URL with another scheme is refused by the API, at the URL field.
  await page.getByLabel(/^Name/).fill('hook');
  await page.getByRole('textbox', { name: 'Type' }).click();
  await page.getByRole('option', { name: 'Webhook' }).click();
  await page.getByLabel(/^URL/).fill('ftp://example.org/x');
  await page.getByLabel(/^Signing secret/).fill('hook-key');
  await page.getByRole('button', { name: 'Add channel' }).click();
  await expect(page.getByText(/the URL must start with http:\/\/ or https:\/\//)).toBeVisible();

  // A webhook nobody listens to: the test button reports the failure, the row keeps it.
  await page.getByLabel(/^URL/).fill(`http://127.0.0.1:${await closedPort()}/hook`);
  await page.getByRole('button', { name: 'Add channel' }).click();
  const channels = page.getByRole('table', { name: 'Alert channels' });
  const hookRow = channels.getByRole('row', { name: /hook/ });
  await expect(hookRow).toBeVisible();
  await hookRow.getByRole('button', { name: 'Test' }).click();
  await expect(page.getByText('Test of hook: failed')).toBeVisible({ timeout: 20_000 });
  await expect(page.getByTestId('test-answer')).toContainText('ConnectionRefusedError');
  await expect(hookRow).toContainText('ConnectionRefusedError');

  // A syslog channel to the receiver above: the test line arrives, the answer says where it went.
  await page.getByLabel(/^Name/).fill('lab-syslog');
  await page.getByRole('textbox', { name: 'Type' }).click();
  await page.getByRole('option', { name: 'Remote syslog' }).click();
  await page.getByLabel(/^Server/).fill('127.0.0.1');
  await page.getByLabel(/^Port/).fill(String(receiverPort));
  await page.getByRole('button', { name: 'Add channel' }).click();
  const syslogRow = channels.getByRole('row', { name: /lab-syslog/ });
  await expect(syslogRow).toBeVisible();
  await syslogRow.getByRole('button', { name: 'Test' }).click();
  await expect(page.getByTestId('test-answer')).toHaveText(new RegExp(`^sent \\d+ bytes over udp to 127\\.0\\.0\\.1:${receiverPort}$`));
  await expect.poll(() => lines.filter((l) => / fulcrum - test - test alert from Fulcrum node /.test(l)).length).toBe(1);

  // A rule: VRRP role changes, critical ones, to the syslog channel.
  await page.getByRole('textbox', { name: 'Channel' }).click();
  await page.getByRole('option', { name: 'lab-syslog' }).click();
  // The pills field lies over the MultiSelect's input: the click lands on the field as a person's would.
  await page.getByRole('textbox', { name: 'Events' }).click({ force: true });
  await page.getByRole('option', { name: 'VRRP role change' }).click();
  await page.keyboard.press('Escape');
  await page.getByRole('textbox', { name: 'At least' }).click();
  await page.getByRole('option', { name: 'critical' }).click();
  await page.getByRole('button', { name: 'Add rule' }).click();
  await expect(page.getByRole('table', { name: 'Alert rules' }).getByRole('row', { name: /lab-syslog/ })).toContainText('VRRP role change');

  // keepalived reports a fault (played through the notify FIFO): one syslog line, then the
  // channel shows its last delivery.
  writeFileSync(A_NOTIFY_FIFO, 'INSTANCE "VG_alerts_e2e" FAULT 100\n');
  await expect.poll(() => lines.filter((l) => / vrrp_state - VRRP instance VG_alerts_e2e is FAULT/.test(l)).length, { timeout: 20_000 }).toBe(1);
  expect(lines.find((l) => l.includes('VG_alerts_e2e'))).toMatch(/^<130>1 /); // local0.crit
  await shoot(page, 'alerts');
});

test('alerts: a channel edited in the same form, a bad server refused at its field, the stored secret kept', async ({ page }) => {
  await login(page, ADMIN);
  await nav(page, 'Alerts');
  const channels = page.getByRole('table', { name: 'Alert channels' });
  await channels.getByRole('row', { name: /lab-syslog/ }).getByRole('button', { name: 'Edit' }).click();
  const dialog = page.getByRole('dialog', { name: 'Edit channel lab-syslog' });
  await expect(dialog.getByLabel(/^Server/)).toHaveValue('127.0.0.1');
  await expect(dialog.getByLabel(/^Port/)).toHaveValue(String(receiverPort));

  // A server name the API refuses: the message is at the Server field, in the dialog.
  await dialog.getByLabel(/^Server/).fill('bad host;reboot');
  await dialog.getByRole('button', { name: 'Save channel' }).click();
  await expect(dialog.getByText("expected a host name (letters, digits, '-', '.') or an IP address")).toBeVisible();
  await expect(dialog.getByLabel(/^Server/)).toHaveAttribute('aria-invalid', 'true');

  await dialog.getByLabel(/^Name/).fill('lab-syslog-2');
  await dialog.getByLabel(/^Server/).fill('localhost');
  await shoot(page, 'alerts-edit', { phone: false });
  await dialog.getByRole('button', { name: 'Save channel' }).click();
  await expect(dialog).toBeHidden();
  const edited = channels.getByRole('row', { name: /lab-syslog-2/ });
  await expect(edited).toContainText(`localhost:${receiverPort} (udp)`);
  await expect(edited.getByRole('switch')).toBeChecked();

  // The webhook's secret field starts empty and may stay so: the stored secret is kept.
  await channels.getByRole('row', { name: /hook/ }).getByRole('button', { name: 'Edit' }).click();
  const hook = page.getByRole('dialog', { name: 'Edit channel hook' });
  await expect(hook.getByLabel(/^Signing secret/)).toHaveValue('');
  await expect(hook.getByText('Empty: keep the stored one')).toBeVisible();
  await hook.getByLabel(/^Name/).fill('hook-2');
  await hook.getByRole('button', { name: 'Save channel' }).click();
  await expect(hook).toBeHidden();
  await expect(channels.getByRole('row', { name: /hook-2/ })).toBeVisible();
  await shoot(page, 'alerts-edited');
});
