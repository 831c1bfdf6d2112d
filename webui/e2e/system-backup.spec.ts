import { expect, test, type Page } from '@playwright/test';
import type { ChildProcess } from 'node:child_process';
import { ADMIN, login, nav, shoot } from './helpers';
import { B, startFreshApi, stopApi } from './peer';

// Export a backup of the main API through System → Backup, restore it there as a candidate (the
// plan shows first), then on a fresh appliance from its first-run page, which then serves the same.
test.describe.configure({ mode: 'serial' });
test.slow(); // a second API on 2 shared cores, and scrypt both ways

const PASSPHRASE = 'e2e backup passphrase';
let fresh: ChildProcess | null = null;
let backupFile = '';
let revisionsInBackup = 0;

test.beforeAll(async ({ request }) => {
  // Runs alone or after the other specs: the admin exists already then (409), which is fine.
  const created = await request.post('/api/v1/setup', { data: ADMIN });
  expect([201, 409]).toContain(created.status());
});

test.afterAll(async () => stopApi(fresh));

/** A change through the API with the page's session: from the dashboard's origin, as the CSRF rule asks. */
function change(page: Page, method: 'POST' | 'DELETE', path: string, data?: object) {
  return page.request.fetch(path, { method, data, headers: { Origin: new URL(page.url()).origin } });
}

test('backup: export with a passphrase, then restore as a candidate showing its plan', async ({ page }, testInfo) => {
  await login(page, ADMIN);
  // Something to restore: a service committed on this appliance (unless an earlier spec made it).
  const existing = (await (await page.request.get('/api/v1/services')).json()) as { data: { name: string }[] };
  if (!existing.data.some((s) => s.name === 'backup-e2e')) {
    const service = { name: 'backup-e2e', address: '192.0.2.77', ports: [8443], backends: [{ address: '198.51.100.77' }] };
    expect((await change(page, 'POST', '/api/v1/services', service)).status()).toBe(201);
    expect((await change(page, 'POST', '/api/v1/revisions', { message: 'for the backup' })).status()).toBe(201);
  }
  await nav(page, 'Backup');
  await page.getByLabel(/^Passphrase/).fill(PASSPHRASE);
  await page.getByLabel('Repeat passphrase').fill('something else entirely');
  await page.getByRole('button', { name: 'Download backup' }).click();
  await expect(page.getByText('The passphrases differ')).toBeVisible();
  await page.getByLabel('Repeat passphrase').fill(PASSPHRASE);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download backup' }).click()]);
  expect(download.suggestedFilename()).toMatch(/^fulcrum-.+\.fbk$/);
  backupFile = testInfo.outputPath('backup.fbk');
  await download.saveAs(backupFile);
  revisionsInBackup = ((await (await page.request.get('/api/v1/revisions')).json()) as { count: number }).count;

  // The service goes, then the backup brings it back as a candidate with a plan to review.
  const services = (await (await page.request.get('/api/v1/services')).json()) as { data: { id: number; name: string }[] };
  const id = services.data.find((s) => s.name === 'backup-e2e')!.id;
  expect((await change(page, 'DELETE', `/api/v1/services/${id}`)).status()).toBe(204);
  expect((await change(page, 'POST', '/api/v1/revisions', { message: 'backup-e2e gone' })).status()).toBe(201);

  const restore = page.getByRole('heading', { name: 'Restore' }).locator('xpath=ancestor::form');
  await restore.locator('input[type=file]').setInputFiles(backupFile);
  await restore.getByLabel('Backup passphrase').fill('not the passphrase');
  await restore.getByRole('button', { name: 'Restore as candidate' }).click();
  await expect(restore.getByText('Wrong passphrase', { exact: true })).toBeVisible();
  await restore.getByLabel('Backup passphrase').fill(PASSPHRASE);
  await restore.getByRole('button', { name: 'Restore as candidate' }).click();
  const outcome = page.getByTestId('restore-outcome');
  await expect(outcome.getByText(/Backup of .* from/)).toBeVisible();
  await expect(outcome.getByText('backup-e2e').first()).toBeVisible();
  await shoot(page, 'system-backup');
  // Nothing applied yet: the candidate waits for review; apply it as any change.
  const changes = (await (await page.request.get('/api/v1/changes')).json()) as { has_changes: boolean };
  expect(changes.has_changes).toBe(true);
  expect((await change(page, 'POST', '/api/v1/revisions', { message: 'restored from the backup' })).status()).toBe(201);
});

test('backup: a fresh appliance restores it from its first-run page and serves the same', async ({ browser, page }) => {
  fresh = await startFreshApi();
  const context = await browser.newContext({ baseURL: B });
  const other = await context.newPage();
  await other.goto('/');
  await other.getByRole('button', { name: 'Restore from a backup' }).click();
  await other.locator('input[type=file]').setInputFiles(backupFile);
  await other.getByLabel('Backup passphrase').fill(PASSPHRASE);
  await shoot(other, 'first-run-restore', { phone: false });
  await other.getByRole('button', { name: 'Restore', exact: true }).click();
  await expect(other.getByText('Restored from the backup')).toBeVisible({ timeout: 30_000 });
  await login(other, ADMIN);

  await login(page, ADMIN);
  const names = async (request: typeof page.request) =>
    ((await (await request.get('/api/v1/services')).json()) as { data: { name: string }[] }).data.map((s) => s.name);
  const revisions = async (request: typeof page.request) => ((await (await request.get('/api/v1/revisions')).json()) as { count: number }).count;
  expect(await names(other.request)).toEqual(await names(page.request));
  expect(await names(other.request)).toContain('backup-e2e');
  expect(await revisions(other.request)).toBe(revisionsInBackup); // its history, up to the backup
  await context.close();
});
