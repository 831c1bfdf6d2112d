import { expect, type Page } from '@playwright/test';
import { mkdirSync } from 'node:fs';

export const ADMIN = { username: 'admin', password: 'correct horse battery staple' };
export const OPERATOR = { username: 'olivia', password: 'operator passphrase 1' };
export const VIEWER = { username: 'victor', password: 'viewer passphrase 1' };

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

export async function login(page: Page, user: { username: string; password: string }) {
  logApiErrors(page);
  await page.goto('/');
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
  // The API commits before it answers, so the session is valid for the requests that follow:
  // a bounce back to the login page would be a regression.
  await page.waitForTimeout(500);
  await expect(page.getByRole('heading', { name: 'Overview' })).toBeVisible();
}

export async function setTheme(page: Page, scheme: 'light' | 'dark') {
  const toggle = page.getByRole('button', { name: `Switch to ${scheme} theme` });
  if (await toggle.isVisible()) await toggle.click();
}

/** A full-page screenshot at desktop width, and one at phone width. */
export async function shoot(page: Page, name: string, { phone = true } = {}) {
  // The SSE stream keeps a request open, so "network idle" never comes: let rendering settle.
  await page.waitForTimeout(600);
  // From the top: a full-page shot of a scrolled page draws the fixed header mid-page.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: `${SHOTS}/${name}-1280.png`, fullPage: true });
  if (phone) {
    const size = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${SHOTS}/${name}-phone.png`, fullPage: true });
    if (size) await page.setViewportSize(size);
  }
}

/** Follow a link of the main navigation. */
export async function nav(page: Page, name: string) {
  await page.getByRole('navigation', { name: 'Main navigation' }).getByRole('link', { name, exact: true }).click();
}
