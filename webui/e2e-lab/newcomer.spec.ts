import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';
import { login, nav, settled } from '../e2e/helpers';

// Against `make demo`'s HA pair (webui/e2e-lab/run): real IPVS, keepalived and a client whose
// requests to 10.77.0.101:8080 fail until someone creates a service there. A newcomer does,
// through the dashboard alone, and watches its traffic arrive; the standby shows it too.
const PASSWORD = process.env.FULCRUM_LAB_PASSWORD ?? '';
const PEER_URL = process.env.FULCRUM_LAB_PEER_URL ?? 'http://127.0.0.1:18181';
const ADMIN = { username: 'admin', password: PASSWORD };
const SHOTS = 'e2e-lab-screenshots';
mkdirSync(SHOTS, { recursive: true });

async function shot(page: Page, name: string) {
  await settled(page);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });
}

/** The time (ms) of the newest point of the `shop` service's 5-minute history, 0 if none. */
async function shopNewestPoint(request: APIRequestContext): Promise<number> {
  const response = await request.get('/api/v1/stats/history?service=shop&range=5m');
  const points = response.ok() ? ((await response.json()) as { points: { t: string }[] }).points : [];
  return points.length ? Date.parse(points[points.length - 1].t) : 0;
}

/** The `shop` service's connection count in /stats/current (the browser's session), if applied. */
async function shopConnections(request: APIRequestContext, base = ''): Promise<number | null> {
  const response = await request.get(`${base}/api/v1/stats/current`);
  if (!response.ok()) return null;
  const body = (await response.json()) as { services: { name: string; counters?: { conns: number } }[] };
  const shop = body.services.find((s) => s.name === 'shop');
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
  // A few more points on the live charts for the screenshot: 15 more seconds of history.
  const newest = await shopNewestPoint(page.request);
  await expect.poll(() => shopNewestPoint(page.request), { timeout: 120_000, intervals: [2_000] }).toBeGreaterThanOrEqual(newest + 15_000);
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

/** The role badge on a node's HA page: this node's, or the peer's. */
function roleOf(page: Page, card: 'this-node' | 'peer-node') {
  return page.getByTestId(card).getByTestId('role');
}

test('the roles, the banner and the drill follow the data plane', async ({ page, browser }) => {
  // Observations are soft assertions, so one run of this slow lab reports every one that fails;
  // the steps (the clicks) stop the test.
  // lb1 holds the VIPs; it shows lb2 as the standby (Mantine renders the badges in capitals).
  await login(page, ADMIN);
  await expect.soft(page.getByTestId('ha-card-role')).toHaveText('active', { timeout: 60_000 });
  await expect.soft(page.getByTestId('ha-card-peer-role')).toHaveText('standby', { timeout: 60_000 });
  await expect.soft(page.getByTestId('ha-card-peer-role')).toHaveCSS('text-transform', 'uppercase');
  await nav(page, 'High availability');
  await expect.soft(roleOf(page, 'this-node')).toHaveText('active');
  await expect.soft(roleOf(page, 'peer-node')).toHaveText('standby');
  await expect.soft(page.getByTestId('standby-banner')).toHaveCount(0);

  // The drill from lb1's dashboard: progress, then the measured result, which stays.
  await page.getByRole('button', { name: 'Failover drill…' }).click();
  const drill = page.getByRole('dialog', { name: 'Failover drill' });
  await drill.getByRole('button', { name: 'Run the drill' }).click();
  await expect.soft(drill.getByTestId('drill-progress')).toBeVisible();
  await expect.soft(drill.getByTestId('drill-refusal')).toHaveCount(0);
  await expect.soft(drill.getByTestId('drill-result')).toBeVisible({ timeout: 120_000 });
  await expect.soft(drill.getByTestId('drill-handover')).toHaveText(/^Time until lb2 held every VIP group: \d+ ms\.$/);
  await expect.soft(drill.getByTestId('drill-probe')).toHaveText(/^Requests probed: [1-9]\d*, failed: \d+ \(connects to .*10\.77\.0\.101:8080.*\)\.$/);
  await expect.soft(drill.getByTestId('drill-connections')).toHaveText(/^Connection-sync entries: \d+ on lb1 before, \d+ on lb2 after\.$/);
  await expect.soft(drill.getByTestId('drill-handback')).toHaveText(/^Hand-back: lb1 left maintenance and was ready again after \d+ ms\. lb2 holds the VIPs now\.$/);
  // The probe runs on lb1, whose own IPVS answers the VIPs wherever they are: the result says so.
  await expect.soft(drill.getByTestId('drill-notes')).toContainText('whether or not it holds them');
  await shot(page, 'newcomer-6-drill');
  await drill.getByRole('button', { name: 'Close' }).click();
  await expect(drill).toBeHidden();

  // Maintenance on lb1: lb2 holds the VIPs (it already does after the drill: no preemption).
  await expect(page.getByRole('button', { name: 'Maintenance…' })).toBeVisible();
  await page.getByRole('button', { name: 'Maintenance…' }).click();
  const ask = page.getByRole('dialog', { name: 'Put lb1 into maintenance?' });
  await ask.getByRole('button', { name: 'Enter maintenance', exact: true }).click();
  await expect.soft(roleOf(page, 'this-node')).toHaveText('maintenance', { timeout: 60_000 });
  await expect.soft(roleOf(page, 'peer-node')).toHaveText('active', { timeout: 60_000 });
  // lb1's banner sends the operator to lb2, the active node, never to itself.
  await expect.soft(page.getByTestId('standby-banner')).toContainText('Read-only here: make changes on the active node lb2', { timeout: 60_000 });
  await shot(page, 'newcomer-7-lb1-maintenance');

  // lb2's own dashboard: lb2 active, no read-only banner, lb1 in maintenance, no unknown role.
  const lb2 = await browser.newPage({ baseURL: PEER_URL });
  await login(lb2, ADMIN);
  await expect.soft(lb2.getByTestId('ha-card-role')).toHaveText('active', { timeout: 60_000 });
  await expect.soft(lb2.getByTestId('ha-card-peer-role')).toHaveText('maintenance', { timeout: 60_000 });
  await expect.soft(lb2.getByText('This node (lb2) does not know its VRRP role')).toHaveCount(0);
  await expect.soft(lb2.getByTestId('standby-banner')).toHaveCount(0);
  await nav(lb2, 'High availability');
  await expect.soft(roleOf(lb2, 'this-node')).toHaveText('active');
  await expect.soft(roleOf(lb2, 'peer-node')).toHaveText('maintenance');
  await expect.soft(lb2.getByTestId('standby-banner')).toHaveCount(0);
  await shot(lb2, 'newcomer-8-lb2-active');
  await lb2.close();

  // Leave the pair as it was found: lb1 out of maintenance (as the standby now).
  await page.getByRole('button', { name: 'End maintenance' }).click();
  await page.getByRole('dialog', { name: 'Take lb1 out of maintenance?' }).getByRole('button', { name: 'End maintenance', exact: true }).click();
  await expect.soft(roleOf(page, 'this-node')).toHaveText('standby', { timeout: 60_000 });
});
