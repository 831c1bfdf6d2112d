import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { login, nav } from '../e2e/helpers';

// Against `make demo`'s HA pair (webui/e2e-lab/run): real IPVS, keepalived and a client whose
// requests to 10.77.0.101:8080 fail until someone creates a service there. A newcomer does,
// through the dashboard alone, and watches its traffic arrive; the standby shows it too.
const PASSWORD = process.env.FULCRUM_LAB_PASSWORD ?? '';
const PEER_URL = process.env.FULCRUM_LAB_PEER_URL ?? 'http://127.0.0.1:18181';
const ADMIN = { username: 'admin', password: PASSWORD };
const SHOTS = 'e2e-lab-screenshots';
mkdirSync(SHOTS, { recursive: true });

async function shot(page: Page, name: string) {
  await page.waitForTimeout(800); // the event stream never lets the network go idle
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
}

/** The `shop` service's connection count in /stats/current (the browser's session), if applied. */
async function shopConnections(request: APIRequestContext, base = ''): Promise<number | null> {
  const response = await request.get(`${base}/api/v1/stats/current`);
  if (!response.ok()) return null;
  const body = await response.json();
  const shop = body.services.find((s: { name: string }) => s.name === 'shop');
  return shop?.counters?.conns ?? null;
}

test.beforeAll(() => {
  expect(PASSWORD, 'FULCRUM_LAB_PASSWORD: run this through webui/e2e-lab/run').not.toBe('');
});

test('a newcomer creates a working service on the demo pair and watches its traffic move', async ({ page, browser }) => {
  await login(page, ADMIN);
  await expect(page.getByText('web0').first()).toBeVisible();
  await shot(page, 'newcomer-1-overview');

  // The common case is three fields: name, VIP:port, backends.
  await nav(page, 'Services');
  await page.getByRole('link', { name: 'New service' }).click();
  await page.getByLabel('Name').fill('shop');
  await page.getByLabel('Virtual IP (VIP)').fill('10.77.0.101');
  await page.getByLabel('Port(s)').fill('8080');
  await page.getByLabel('Backend 1 address').fill('10.77.1.21');
  await page.getByLabel('Backend 2 address').fill('10.77.1.22');
  // The backends serve HTTP on 80, not on the service's 8080.
  await page.getByLabel('Port', { exact: true }).nth(0).fill('80');
  await page.getByLabel('Port', { exact: true }).nth(1).fill('80');
  await shot(page, 'newcomer-2-form');
  await page.getByRole('button', { name: 'Create service' }).click();
  await expect(page.getByRole('heading', { name: 'shop' })).toBeVisible();

  await page.getByRole('button', { name: 'Review & apply' }).click();
  const dialog = page.getByRole('dialog', { name: 'Review pending changes' });
  await expect(dialog.getByText('shop (10.77.0.101:8080/tcp)').first()).toBeVisible();
  await dialog.getByLabel('Note for the revision log').fill('shop on 8080');
  await dialog.getByRole('button', { name: /^Apply/ }).click();
  await expect(dialog.getByText(/Revision \d+ is running/)).toBeVisible({ timeout: 180_000 });
  await shot(page, 'newcomer-3-applied');
  await dialog.getByRole('button', { name: 'Close' }).click();

  // keepalived adds each backend after its first passing check; the client's requests then land.
  for (const address of ['10.77.1.21', '10.77.1.22']) {
    await expect(page.getByTestId(`backend-${address}`).getByText('up', { exact: true })).toBeVisible({ timeout: 180_000 });
  }
  await expect.poll(() => shopConnections(page.request), { timeout: 120_000, intervals: [2_000] }).toBeGreaterThan(0);
  const first = (await shopConnections(page.request)) ?? 0;
  await expect.poll(() => shopConnections(page.request), { timeout: 120_000, intervals: [2_000] }).toBeGreaterThan(first);
  // The table's per-backend conn/s, fed by the same stream, shows traffic on both backends.
  for (const address of ['10.77.1.21', '10.77.1.22']) {
    await expect(page.getByTestId(`backend-${address}`).locator('td').nth(5)).not.toHaveText(/^(0|—)$/, { timeout: 60_000 });
  }
  await page.waitForTimeout(15_000); // a few more points on the live charts for the screenshot
  await shot(page, 'newcomer-4-traffic');

  // The standby got it by replication, refuses edits, and says where to make them.
  const peer = await browser.newPage({ baseURL: PEER_URL });
  await login(peer, ADMIN);
  await expect(peer.getByTestId('standby-banner')).toBeVisible();
  await nav(peer, 'Services');
  await expect(peer.getByRole('link', { name: 'shop' })).toBeVisible({ timeout: 120_000 });
  await shot(peer, 'newcomer-5-standby');
  await peer.close();
});
