import { expect, test, type Page } from '@playwright/test';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN, login, nav, shoot } from './helpers';
import { B, startFreshApi, stopApi } from './peer';

// The Certificate page against an API that has a served certificate (start-api.sh with
// FULCRUM_E2E_TLS=1; it still speaks plain HTTP: serving on the next connection is the API tests').
test.describe.configure({ mode: 'serial' });
test.slow();

const here = dirname(fileURLToPath(import.meta.url));
let api: ChildProcess | null = null;

type Pair = { certificate: string; key: string; other_key: string; fingerprint: string };

/** A server certificate and key made here with `cryptography` (tests/api/certmaker.py), and a key of another pair. */
function makePair(): Pair {
  const script = `
import json, sys, hashlib
sys.path.insert(0, ${JSON.stringify(resolve(here, '../../tests/api'))})
from certmaker import issue, key_pem, new_key, pem
from cryptography.hazmat.primitives import serialization
leaf = issue("lb.example.net", names=["lb.example.net", "127.0.0.1"])
der = leaf.certificate.public_bytes(serialization.Encoding.DER)
print(json.dumps({"certificate": pem(leaf.certificate), "key": key_pem(leaf.key), "other_key": key_pem(new_key()),
                  "fingerprint": hashlib.sha256(der).hexdigest()}))`;
  return JSON.parse(execFileSync(resolve(here, '../../.venv/bin/python'), ['-c', script], { encoding: 'utf8' })) as Pair;
}

async function openCertificatePage(page: Page) {
  await login(page, ADMIN);
  await nav(page, 'Certificate');
  await expect(page.getByTestId('certificate-fingerprint')).toBeVisible();
}

test.beforeAll(async () => {
  api = await startFreshApi({ FULCRUM_E2E_TLS: '1' });
  const created = await fetch(`${B}/api/v1/setup`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(ADMIN) });
  expect(created.status).toBe(201);
});

test.afterAll(async () => stopApi(api));

test('certificate: a mismatched key is refused at its field; a good pair is installed and shown', async ({ browser }) => {
  const page = await (await browser.newContext({ baseURL: B })).newPage();
  await openCertificatePage(page);
  await expect(page.getByText('self-signed')).toBeVisible();
  const pair = makePair();

  await page.getByLabel('Certificate chain').fill(pair.certificate);
  await page.getByLabel('Private key').fill(pair.other_key);
  await page.getByRole('button', { name: 'Install certificate' }).click();
  await expect(page.getByText('the private key does not belong to the first certificate of the chain')).toBeVisible();
  await expect(page.getByTestId('certificate-fingerprint')).not.toHaveText(pair.fingerprint);

  await page.getByLabel('Private key').fill(pair.key);
  await page.getByRole('button', { name: 'Install certificate' }).click();
  await expect(page.getByTestId('certificate-fingerprint')).toHaveText(pair.fingerprint);
  await expect(page.getByText('lb.example.net, 127.0.0.1')).toBeVisible();
  await shoot(page, 'system-certificate');
});

test('certificate: a CSR is generated and downloaded', async ({ browser }) => {
  const page = await (await browser.newContext({ baseURL: B })).newPage();
  await openCertificatePage(page);
  await page.getByLabel('Common name').fill('lb.example.net');
  await page.getByLabel(/^Names/).fill('lb.example.net, 192.0.2.5');
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Generate and download CSR' }).click()]);
  expect(download.suggestedFilename()).toMatch(/\.csr$/);
  await expect(page.getByRole('button', { name: /Download the pending request/ })).toBeVisible();
  await expect(page.getByText('leave empty for a certificate signed for the pending request below')).toBeVisible();
});
