import { expect, test } from '@playwright/test';
import { ADMIN, login, shoot } from './helpers';

test.beforeAll(async ({ request }) => {
  // Runs alone or after the other specs: the admin exists already then (409), which is fine.
  const response = await request.post('/api/v1/setup', { data: ADMIN });
  expect([201, 409]).toContain(response.status());
});

test('the overview shows how full the data disk is, as the API measures it', async ({ page }) => {
  await login(page, ADMIN);
  const answer = await page.request.get('/api/v1/system/storage');
  expect(answer.ok()).toBe(true);
  const { disk } = (await answer.json()) as { disk: { path: string } };
  const card = page.getByTestId('disk-card');
  await expect(card.getByText(/^\d+(\.\d)?% used$/)).toBeVisible();
  await expect(card.getByRole('progressbar', { name: 'Data disk used' })).toBeVisible();
  await expect(
    card.getByText(new RegExp(`free of \\S+ on ${disk.path}; database \\S+B, WAL \\S+B; statistics history \\S+B\\.`)),
  ).toBeVisible();
  await shoot(page, 'overview-data-disk');
});
