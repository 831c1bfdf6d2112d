import { expect, test } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type Server } from 'node:tls';
import { ADMIN, login, nav, shoot } from './helpers';

test.describe.configure({ mode: 'serial' });
// Named system-*: it runs after dashboard.spec.ts, whose first test sets the admin up on a fresh API.

// A real syslog-over-TLS receiver (RFC 5425) in the test process, its certificate for 127.0.0.1
// made by a private CA: the appliance trusts it only with that CA in the channel.
const here = dirname(fileURLToPath(import.meta.url));
let receiver: Server;
let receiverPort = 0;
let caPem = '';
const records: string[] = [];

type PrivateCa = { ca: string; cert: string; key: string };

/** A private CA and a server certificate it issued for 127.0.0.1, made with tests/api/certmaker.py. */
function privateCa(): PrivateCa {
  const script = `
import json, sys
sys.path.insert(0, ${JSON.stringify(resolve(here, '../../tests/api'))})
from certmaker import issue, key_pem, pem
root = issue("E2E Office CA", ca=True)
server = issue("127.0.0.1", root, names=["127.0.0.1"])
print(json.dumps({"ca": pem(root.certificate), "cert": pem(server.certificate), "key": key_pem(server.key)}))`;
  return JSON.parse(execFileSync(resolve(here, '../../.venv/bin/python'), ['-c', script], { encoding: 'utf8' })) as PrivateCa;
}

test.beforeAll(async ({ request }) => {
  // Runs alone or after the other specs: the admin exists already then (409), which is fine.
  const response = await request.post('/api/v1/setup', { data: ADMIN });
  expect([201, 409]).toContain(response.status());
  const { ca, cert, key } = privateCa();
  caPem = ca;
  receiver = createServer({ cert, key }, (socket) => {
    let data = '';
    socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
    socket.on('end', () => records.push(data));
  });
  receiver.on('tlsClientError', () => undefined); // a client refusing the certificate: nothing arrives
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverPort = (receiver.address() as { port: number }).port;
});

test.afterAll(() => receiver.close());

test('alerts over TLS: the CA field only where TLS applies, a bad CA at its field, then delivered trusting a private CA', async ({ page }) => {
  await login(page, ADMIN);
  await nav(page, 'Alerts');
  const caField = page.getByLabel('CA certificate (PEM)');

  // Remote syslog over UDP makes no TLS connection: no CA field until the transport is TLS.
  const name = `tls-syslog-${receiverPort}`; // one of its own on an API that runs on (--repeat-each)
  await page.getByLabel(/^Name/).fill(name);
  await page.getByRole('textbox', { name: 'Type' }).click();
  await page.getByRole('option', { name: 'Remote syslog' }).click();
  await expect(caField).toHaveCount(0);
  await page.getByRole('textbox', { name: 'Transport' }).click();
  await page.getByRole('option', { name: 'TLS' }).click();
  await expect(caField).toBeVisible();
  await page.getByLabel(/^Server/).fill('127.0.0.1');
  await page.getByLabel(/^Port/).fill(String(receiverPort));

  // Not a certificate: refused by the API, shown at the field.
  await caField.fill('not a certificate');
  await page.getByRole('button', { name: 'Add channel' }).click();
  await expect(page.getByText('expected one or more PEM certificates')).toBeVisible();
  await expect(caField).toHaveAttribute('aria-invalid', 'true');

  await caField.fill(caPem);
  await page.getByRole('button', { name: 'Add channel' }).click();
  const row = page.getByRole('table', { name: 'Alert channels' }).getByRole('row', { name: new RegExp(name) });
  await expect(row).toBeVisible();
  await row.getByRole('button', { name: 'Test' }).click();
  await expect(page.getByTestId('test-answer')).toHaveText(new RegExp(`^sent \\d+ bytes over tls to 127\\.0\\.0\\.1:${receiverPort}$`));
  await expect.poll(() => records.filter((r) => /^\d+ <134>1 \S+ \S+ fulcrum - test - test alert from Fulcrum node /.test(r)).length).toBe(1);

  // The same form for an e-mail channel with STARTTLS shows the field; without TLS it goes away.
  await page.getByRole('textbox', { name: 'Type' }).click();
  await page.getByRole('option', { name: 'E-mail (SMTP)' }).click();
  await expect(caField).toBeVisible();
  await page.getByRole('textbox', { name: 'Security' }).click();
  await page.getByRole('option', { name: 'None' }).click();
  await expect(caField).toHaveCount(0);
  await page.getByRole('textbox', { name: 'Security' }).click();
  await page.getByRole('option', { name: 'STARTTLS' }).click();
  await caField.fill(caPem);
  await shoot(page, 'alerts-tls');
});
