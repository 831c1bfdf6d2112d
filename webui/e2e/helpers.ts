import { expect, type APIRequestContext, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';

export const ADMIN = { username: 'admin', password: 'correct horse battery staple' };
export const OPERATOR = { username: 'olivia', password: 'operator passphrase 1' };
export const VIEWER = { username: 'victor', password: 'viewer passphrase 1' };

/** A bearer token for `user`, signed in through the API outside the browser. */
export async function apiToken(request: APIRequestContext, user: { username: string; password: string }): Promise<string> {
  const response = await request.post('/api/v1/auth/login', { data: user });
  expect(response.status()).toBe(200);
  return ((await response.json()) as { token: string }).token;
}

// Hooks that sign in (and may commit) get this long: each sign-in hashes a password (argon2,
// 64 MiB), seconds on two cores shared with other builds; a hook timed out once at the default 30 s.
export const HOOK_TIMEOUT = 90_000;

/** The admin's API headers; the admin is created first when the spec runs alone (409: it exists). */
export async function adminHeaders(request: APIRequestContext): Promise<Record<string, string>> {
  expect([201, 409]).toContain((await request.post('/api/v1/setup', { data: ADMIN })).status());
  return { Authorization: `Bearer ${await apiToken(request, ADMIN)}` };
}

/** A service BGP may announce (fulcrum.config.cluster): mh with fallback, DR, a failed backend kept at weight 0. */
export function announceableService(name: string, address: string, backend: string) {
  return {
    name,
    address,
    ports: [80],
    forwarding: 'dr',
    scheduler: 'mh',
    scheduler_fallback: true,
    health_check: { on_failure: 'weight_zero' },
    backends: [{ address: backend }],
  };
}

export const SHOTS = 'e2e-screenshots';
mkdirSync(SHOTS, { recursive: true });

/** Print failed API calls, so a failing step shows what the server said. */
export function logApiErrors(page: Page) {
  page.on('response', async (response) => {
    if (response.url().includes('/api/') && response.status() >= 400) {
      const body = await response.text().catch(() => '');
      console.log(`API ${response.status()} ${response.request().method()} ${response.url()} ${body.slice(0, 160)}`);
    }
  });
}

/** Every API call answered 401 from now on (the sign-in itself aside): a fresh session refused. */
export function recordRefusals(page: Page): string[] {
  const refused: string[] = [];
  page.on('response', (response) => {
    const url = response.url();
    if (url.includes('/api/') && !url.includes('/auth/login') && response.status() === 401) {
      refused.push(`${response.request().method()} ${url}`);
    }
  });
  return refused;
}

/**
 * The overview has loaded with the new session and stayed. The API commits before it answers,
 * so the session is valid for the requests that follow: the overview's own queries (the HA card
 * shows once /ha/status answered) must not be refused, and no bounce back to the login page.
 */
export async function expectSessionHolds(page: Page, refused: string[]) {
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  await expect(page.getByTestId('ha-card-role')).toBeVisible();
  expect(refused, 'API calls refused right after signing in').toEqual([]);
  await expect(page.getByRole('button', { name: 'Sign in' })).toBeHidden();
}

export async function login(page: Page, user: { username: string; password: string }) {
  logApiErrors(page);
  await page.goto('/');
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  const refused = recordRefusals(page); // from here: the login page's own /auth/me was a 401
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expectSessionHolds(page, refused);
}

export async function setTheme(page: Page, scheme: 'light' | 'dark') {
  const toggle = page.getByRole('button', { name: `Switch to ${scheme} theme` });
  if (await toggle.isVisible()) await toggle.click();
}

/** A full-page screenshot at desktop width, and one at phone width. */
export async function shoot(page: Page, name: string, { phone = true } = {}) {
  await settled(page);
  // From the top: a full-page shot of a scrolled page draws the fixed header mid-page.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${SHOTS}/${name}-1280.png`, fullPage: true });
  if (phone) {
    const size = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    await settled(page);
    await page.screenshot({ path: `${SHOTS}/${name}-phone.png`, fullPage: true });
    if (size) await page.setViewportSize(size);
  }
}

/**
 * Rendering has settled: no page is loading and no transition is running (a spinner's endless
 * animation aside). The SSE stream keeps a request open, so "network idle" never comes.
 */
export async function settled(page: Page) {
  await expect(page.getByLabel('Loading', { exact: true })).toHaveCount(0);
  await expect
    .poll(() =>
      page.evaluate(
        () =>
          document
            .getAnimations()
            .filter((a) => a.playState === 'running' && a.effect?.getTiming().iterations !== Infinity).length,
      ),
    )
    .toBe(0);
}

/**
 * Follow a link of the main navigation and wait for the page's heading (`heading`, when it is not
 * the link's own name). A link in a folded group (System) is reached by unfolding the group first:
 * every spec goes through here, because Mantine's Collapse grows with `overflow: hidden`, and a
 * click while it grows can land on the row next to the link, so the click waits for the end.
 */
export async function nav(page: Page, name: string, heading = name) {
  const navigation = page.getByRole('navigation', { name: 'Main navigation' });
  const link = navigation.getByRole('link', { name, exact: true, includeHidden: true });
  const group = await link.evaluate((a) => a.closest('[id^="nav-group-"]')?.id);
  if (group) {
    const toggle = navigation.locator(`[aria-controls="${group}"]`);
    if ((await toggle.getAttribute('aria-expanded')) === 'false') await toggle.click();
    await expect(page.locator('#' + (await toggle.getAttribute('aria-controls')))).toHaveCSS('overflow', 'visible');
  }
  await link.click();
  await expect(page.getByRole('heading', { level: 2, name: heading, exact: true })).toBeVisible();
}
