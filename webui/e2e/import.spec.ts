import { expect, test } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN, login, nav, shoot } from './helpers';

// The seed thesis's round-robin script, exactly as it is piped into `ipvsadm -R`.
const here = dirname(fileURLToPath(import.meta.url));
const RR = readFileSync(resolve(here, '../../tests/unit/importer/fixtures/seed/rr.sh'), 'utf8');

test.describe.configure({ mode: 'serial' });

test.beforeAll(async ({ request }) => {
  // Runs alone or after the other specs: the admin exists already then (409), which is fine.
  const response = await request.post('/api/v1/setup', { data: ADMIN });
  expect([201, 409]).toContain(response.status());
});

test('import ipvsadm rules: paste, the report, the plan, then commit', async ({ page }) => {
  test.slow(); // preview, import and commit each wait on the real API; the 2 cores are shared
  await login(page, ADMIN);
  await nav(page, 'Import');
  await expect(page.getByRole('heading', { name: 'Import' })).toBeVisible();
  await page.getByLabel('Configuration').fill(RR);
  await page.getByRole('button', { name: 'Preview' }).click();

  const report = page.getByRole('table', { name: 'Import report' });
  const serviceRule = report.getByRole('row', { name: /-A -t 202\.103\.106\.5:80 -s rr/ });
  await expect(serviceRule).toContainText('changed');
  await expect(serviceRule).toContainText('service 202.103.106.5-80 (named after its address');
  await expect(report.getByRole('row', { name: /-r 172\.16\.0\.4:80/ })).toContainText('imported');
  const service = page.getByTestId('import-service-202.103.106.5-80');
  await expect(service).toContainText('add');
  await expect(service).toContainText('202.103.106.5:80/tcp rr nat, 3 backends');
  await expect(page.getByText('Imported into the candidate configuration')).toBeHidden();
  await shoot(page, 'import-preview', { phone: false });

  await page.getByRole('button', { name: 'Import into the candidate' }).click();
  await expect(page.getByText('Imported into the candidate configuration.', { exact: false }).first()).toBeVisible();
  await expect(page.getByRole('region', { name: 'Pending changes' })).toBeVisible();

  await page.getByRole('button', { name: 'Review & apply' }).click();
  const dialog = page.getByRole('dialog', { name: 'Review pending changes' });
  await expect(dialog.getByText('202.103.106.5-80 (202.103.106.5:80/tcp)').first()).toBeVisible();
  await dialog.getByLabel('Note for the revision log').fill('import rr.sh');
  await dialog.getByRole('button', { name: /^Apply/ }).click();
  await expect(dialog.getByText(/Revision \d+ validated, not applied/)).toBeVisible();
  await dialog.getByRole('button', { name: 'Close' }).click();
  await expect(page.getByRole('region', { name: 'Pending changes' })).toBeHidden();

  await nav(page, 'Services');
  await expect(page.getByRole('link', { name: '202.103.106.5-80' })).toBeVisible();
});
