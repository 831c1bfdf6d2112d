import { expect, test, type Browser, type Page } from '@playwright/test';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN, login, nav, setTheme, shoot } from './helpers';
import { A_NOTIFY_FIFO, A_PORT, B_PORT } from './ports';

// Two real APIs on this host: A (the Playwright web server, A_PORT) and B, started here so a
// step can stop it. No keepalived runs here, so neither node is VRRP MASTER: the one-writer rule
// falls back to priority, and B (priority 50) is the standby.
test.describe.configure({ mode: 'serial' });
// Two APIs on 2 shared cores, and the watcher's 2 s rounds: every step gets three times the time.
test.slow();

const A = `http://127.0.0.1:${A_PORT}`;
const B = `http://127.0.0.1:${B_PORT}`;
const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const here = dirname(fileURLToPath(import.meta.url));
let peer: ChildProcess | null = null;

async function poll<T>(what: string, check: () => Promise<T | null | undefined | false>, seconds = 30): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const value = await check().catch(() => null);
    if (value) return value;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${seconds} s waiting for ${what}`);
}

function startPeer(): Promise<unknown> {
  peer = spawn(resolve(here, 'start-api.sh'), [], {
    env: { ...process.env, FULCRUM_E2E_PORT: String(B_PORT) },
    detached: true, // its own process group: stopping it stops uvicorn too
    stdio: 'inherit',
  });
  return poll('the peer API to answer', async () => (await fetch(`${B}/api/v1/health`)).ok);
}

async function stopPeer(): Promise<void> {
  const child = peer;
  peer = null;
  if (!child || child.exitCode !== null || child.pid === undefined) return;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid, 'SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
}

/** The admin exists on a node (created here when this file runs on its own). */
async function ensureAdmin(origin: string) {
  const setup = (await (await fetch(`${origin}/api/v1/setup`)).json()) as { needs_setup: boolean };
  if (setup.needs_setup) {
    const created = await fetch(`${origin}/api/v1/setup`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(ADMIN),
    });
    expect(created.status).toBe(201);
  }
}

async function peerPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext({ baseURL: B });
  const page = await context.newPage();
  await login(page, ADMIN);
  return page;
}

/** Click the confirm button of the open confirmation dialog titled `title`. */
async function confirm(page: Page, title: string | RegExp, button: string) {
  const dialog = page.getByRole('dialog', { name: title });
  await dialog.getByRole('button', { name: button, exact: true }).click();
  await expect(dialog).toBeHidden();
}

async function tokenFor(origin: string): Promise<string> {
  const answer = await fetch(`${origin}/api/v1/auth/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(ADMIN) });
  expect(answer.status).toBe(200);
  return ((await answer.json()) as { token: string }).token;
}

async function call(origin: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${origin}/api/v1${path}`, {
    method,
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${await tokenFor(origin)}` },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Report a VRRP state of A's as keepalived does, through its notify FIFO. */
function reportVrrp(group: string, state: 'MASTER' | 'BACKUP' | 'FAULT') {
  writeFileSync(A_NOTIFY_FIFO, `INSTANCE "VG_${group}" ${state} 100\n`);
}

test.beforeAll(async () => {
  await ensureAdmin(A);
  await startPeer();
  await ensureAdmin(B);
  // B's own node settings: another name and a lower priority.
  const token = await tokenFor(B);
  const node = await fetch(`${B}/api/v1/node`, {
    method: 'PUT',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ name: 'lb2', priority: 50 }),
  });
  expect(node.status).toBe(200);
});

test.afterAll(stopPeer);

test('HA: a lone node says so', async ({ page }) => {
  await login(page, ADMIN);
  await expect(page.getByTestId('ha-card-sync')).toHaveText('Single node: no peer, no failover.');
  await nav(page, 'High availability');
  await expect(page.getByTestId('this-node').getByTestId('role')).toHaveText('standalone');
  await expect(page.getByTestId('sync-state')).toContainText('Not paired');
  await expect(page.getByTestId('peer-node')).toContainText('No peer');
  await shoot(page, 'ha-standalone', { phone: false });
});

test('HA: pair with the code the other node shows; a wrong code is refused at its field', async ({ page, browser }) => {
  const b = await peerPage(browser);
  await nav(b, 'High availability');
  await b.getByRole('button', { name: 'Show a pairing code' }).click();
  const code = (await b.getByTestId('pairing-code').textContent())!.trim();
  expect(code).toMatch(/^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$/);

  await login(page, ADMIN);
  await nav(page, 'High availability');
  await page.getByLabel(/other node.s address/).fill(B);
  await page.getByLabel(/^Pairing code/).fill('ABCD-EFGH-JKLM');
  await page.getByRole('button', { name: /how the other node reaches this one/ }).click();
  await page.getByLabel(/^This node.s address as the other node reaches it/).fill(A);
  await page.getByRole('button', { name: 'Pair…' }).click();
  const ask = page.getByRole('dialog', { name: /Pair and replace the other node.s configuration/ });
  await expect(ask).toContainText('fulcrum’s configuration will replace the peer’s');
  await shoot(page, 'ha-pair-confirm', { phone: false });
  await confirm(page, /Pair and replace/, 'Pair and replace');
  // B refused the code (401 there); A's answer is a 422 at the code field.
  await expect(page.getByText(/the pairing code was not accepted by the peer/)).toBeVisible({ timeout: 15_000 });

  await page.getByLabel(/^Pairing code/).fill(code.toLowerCase());
  await page.getByRole('button', { name: 'Pair…' }).click();
  await confirm(page, /Pair and replace/, 'Pair and replace');
  await expect(page.getByText(new RegExp(`^Paired with lb2 at ${escaped(B)}`))).toBeVisible({ timeout: 20_000 });
  const peerCard = page.getByTestId('peer-node');
  await expect(peerCard).toContainText('lb2');
  await expect(peerCard.getByTestId('peer-reachability')).toHaveAttribute('data-reachable', 'reachable', { timeout: 20_000 });
  const sync = page.getByTestId('sync-state');
  await expect(sync).toHaveAttribute('data-state', 'in_sync', { timeout: 20_000 });
  await expect(sync).toContainText(/In sync/);
  await expect(page.getByTestId('this-node')).toContainText('changes are made here');
  await shoot(page, 'ha-paired');
  await setTheme(page, 'dark');
  await shoot(page, 'ha-paired-dark');
  await setTheme(page, 'light');

  await nav(page, 'Overview');
  await expect(page.getByTestId('ha-card')).toContainText('peer lb2');
  await expect(page.getByTestId('ha-card-sync')).toHaveText(/In sync/);
  await b.context().close();
});

test('HA: the standby says where to edit, and refuses an edit with that banner', async ({ browser }) => {
  // Pairing replaced B's accounts with A's: the same admin signs in there.
  const b = await peerPage(browser);
  const banner = b.getByTestId('standby-banner');
  await expect(banner).toContainText('Read-only here: make changes on fulcrum', { timeout: 15_000 });
  await expect(banner.getByRole('link', { name: A })).toHaveAttribute('href', A);
  await nav(b, 'Firewall', 'Management firewall');
  await b.getByLabel('Management ports').fill('22, 443, 8443');
  await b.getByRole('button', { name: 'Save firewall policy' }).click();
  const anyway = b.getByRole('dialog', { name: /shuts out access/ });
  if (await anyway.isVisible().catch(() => false)) await anyway.getByRole('button', { name: 'Save anyway' }).click();
  // The API's 409 standby_read_only: the banner now carries that refusal (and can be dismissed).
  await expect(banner.getByRole('button', { name: 'Dismiss' })).toBeVisible();
  await expect(b.getByText(new RegExp(`this node is standby; make changes on the active node fulcrum at ${escaped(A)}`)).first()).toBeVisible();
  await shoot(b, 'ha-standby-refusal');

  // Maintenance is this node's own business: allowed on the standby, asked first.
  await nav(b, 'High availability');
  await expect(b.getByTestId('peer-node')).toContainText('fulcrum');
  await b.getByRole('button', { name: 'Maintenance…' }).click();
  await expect(b.getByRole('dialog', { name: 'Put lb2 into maintenance?' })).toContainText('fulcrum takes them over');
  await confirm(b, 'Put lb2 into maintenance?', 'Enter maintenance');
  await expect(b.getByTestId('this-node').getByTestId('role')).toHaveText('maintenance');
  // Toasts stack from below the header: the topmost covers neither the account menu nor the theme toggle.
  const toasts = b.locator('.mantine-Notifications-root[data-position="top-right"]').getByRole('alert');
  await expect(toasts.filter({ hasText: 'lb2 is in maintenance.' })).toBeVisible();
  const [topmost, header] = [await toasts.first().boundingBox(), await b.locator('header').boundingBox()];
  expect(topmost!.y).toBeGreaterThanOrEqual(header!.y + header!.height);
  await shoot(b, 'ha-standby');
  await nav(b, 'Overview');
  await expect(b.getByText('This node (lb2) is in maintenance', { exact: true })).toBeVisible();
  await nav(b, 'High availability');
  await b.getByRole('button', { name: 'End maintenance' }).click();
  await confirm(b, 'Take lb2 out of maintenance?', 'End maintenance');
  await expect(b.getByTestId('this-node').getByTestId('role')).not.toHaveText('maintenance');
  await b.context().close();
});

test('HA: the failover drill shows the API’s refusal in its dialog, until it is closed', async ({ page }) => {
  // A commit replicated to B, the unknown role's grace before its alarm, two HA refreshes: 17-21 s
  // on an idle or a make-test machine, too near the default 30 s on a busier one.
  test.slow();
  // A VIP group, replicated to B: A reports MASTER (played through its notify FIFO), while B,
  // with no keepalived to report anything, stays of unknown role: it could not take over.
  expect((await call(A, 'POST', '/vip-groups', { name: 'front', virtual_router_id: 51, addresses: ['192.0.2.100/24'] })).status).toBe(201);
  expect((await call(A, 'POST', '/revisions', { message: 'front VIP group' })).status).toBe(201);
  reportVrrp('front', 'MASTER');
  await login(page, ADMIN);
  // B's unknown role is an alarm on A once it lasts, not a grey badge.
  await expect(page.getByText('The role of peer lb2 is unknown', { exact: true })).toBeVisible({ timeout: 30_000 });
  await expect(page.getByTestId('ha-card-peer-role')).toHaveText('unknown');
  await nav(page, 'High availability');
  await expect(page.getByTestId('this-node').getByTestId('role')).toHaveText('active', { timeout: 15_000 });
  await page.getByRole('button', { name: 'Failover drill…' }).click();
  const dialog = page.getByRole('dialog', { name: 'Failover drill' });
  await dialog.getByRole('button', { name: 'Run the drill' }).click();
  const refusal = dialog.getByTestId('drill-refusal');
  await expect(refusal).toContainText('The drill did not run');
  await expect(refusal).toContainText('lb2 is unknown, not standby: it could not take over');
  // It stays while the page refreshes the HA state (every 3 s), until closed.
  for (let i = 0; i < 2; i++) await page.waitForResponse((r) => r.url().endsWith('/api/v1/ha/status'));
  await expect(refusal).toBeVisible();
  await shoot(page, 'ha-drill-refused', { phone: false });
  await dialog.getByRole('button', { name: 'Close' }).click();
  await expect(dialog).toBeHidden();
  // The active node offers the pair upgrade; this API has no RAUC system, and says so there.
  await expect(page.getByTestId('pair-upgrade')).toContainText('lb2 first, then one failover to it, then fulcrum');
  await expect(page.getByTestId('pair-upgrade-not-ab')).toContainText('fulcrum cannot be upgraded here: not an A/B system');
  await expect(page.getByRole('button', { name: /^Upgrade the pair/ })).toHaveCount(0);
});

test('HA: saving this node’s settings keeps its VIP and tracked interfaces, and the plan says they change', async ({ page }) => {
  // Set by the API (the form does not show them), as a gateway VIP on the backend side would be.
  const placed = await call(A, 'PATCH', '/node', { vip_interfaces: { front: 'eth1' }, track_interfaces: ['eth2'] });
  expect(placed.status).toBe(200);
  await login(page, ADMIN);
  await nav(page, 'High availability');
  await page.getByLabel('Priority').fill('120');
  const saved = page.waitForResponse((r) => r.url().endsWith('/api/v1/node') && r.request().method() === 'PATCH');
  await page.getByRole('button', { name: 'Save node settings' }).click();
  expect((await saved).status()).toBe(200);
  const node: unknown = await (await call(A, 'GET', '/node')).json();
  expect(node).toMatchObject({ priority: 120, vip_interfaces: { front: 'eth1' }, track_interfaces: ['eth2'] });

  await page.getByRole('button', { name: 'Review & apply' }).click();
  const review = page.getByRole('dialog', { name: 'Review pending changes' });
  await expect(review.getByText(/VIP interfaces change: front eth0 \(the VRRP interface\) → eth1/)).toBeVisible();
  await expect(review.getByText(/tracked interfaces change: tracks eth2/)).toBeVisible();
  await review.getByRole('button', { name: 'Keep editing' }).click();
  // Not applied here (no eth1 on this host): back to what is running, for the tests that follow.
  expect((await call(A, 'PATCH', '/node', { vip_interfaces: {}, track_interfaces: [], priority: 100 })).status).toBe(200);
});

test('HA: a peer that stops answering raises an alarm; unpairing still works', async ({ page }) => {
  await stopPeer();
  await login(page, ADMIN);
  // exact: the event may also arrive live, as a toast ("peer lb2 is unreachable: ...").
  const alarm = page.getByText('Peer lb2 is unreachable', { exact: true });
  await expect(alarm).toBeVisible({ timeout: 30_000 });
  await shoot(page, 'overview-peer-unreachable', { phone: false });
  await nav(page, 'High availability');
  await expect(page.getByTestId('sync-state')).toHaveAttribute('data-state', 'unreachable');
  await expect(page.getByTestId('sync-state')).toContainText('Peer unreachable since');
  await expect(page.getByTestId('peer-reachability')).toHaveAttribute('data-reachable', 'unreachable');
  await shoot(page, 'ha-peer-unreachable');

  await page.getByRole('button', { name: 'Unpair' }).click();
  await expect(page.getByRole('dialog', { name: 'Unpair from lb2?' })).toContainText('both accept changes again');
  await confirm(page, 'Unpair from lb2?', 'Unpair');
  await expect(page.getByTestId('peer-node')).toContainText('No peer', { timeout: 20_000 });
  await expect(page.getByTestId('sync-state')).toContainText('Not paired');
  await nav(page, 'Overview');
  await expect(alarm).toBeHidden();
});
