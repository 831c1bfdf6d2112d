import { expect, test } from '@playwright/test';
import { ADMIN, adminHeaders, announceableService, HOOK_TIMEOUT, login, nav, shoot } from './helpers';

// An admin sets up this node's BGP in the dashboard against the real API: a refusal shows at the
// field it names and loses nothing typed, the saved settings come back (the password only as
// "stored"), the review says what FRR will do, and removing BGP asks first.

const SERVICE = announceableService('bgp-announced', '192.0.2.78', '198.51.100.78');

let headers: Record<string, string> = {};
let serviceId: number | null = null;

test.beforeAll(async ({ request }) => {
  test.setTimeout(HOOK_TIMEOUT);
  headers = await adminHeaders(request);
  expect([204, 404]).toContain((await request.delete('/api/v1/bgp', { headers })).status());
  const created = await request.post('/api/v1/services', { headers, data: SERVICE });
  expect(created.status(), await created.text()).toBe(201);
  serviceId = ((await created.json()) as { id: number }).id;
});

test.afterAll(async ({ request }) => {
  test.setTimeout(HOOK_TIMEOUT);
  // Back to where the other specs expect the candidate: no BGP, no such service.
  expect([204, 404]).toContain((await request.delete('/api/v1/bgp', { headers })).status());
  if (serviceId !== null) expect([204, 404]).toContain((await request.delete(`/api/v1/services/${serviceId}`, { headers })).status());
});

test('an admin sets up BGP in the dashboard, sees a refusal at its field, edits and removes it', async ({ page, request }) => {
  await login(page, ADMIN);
  await nav(page, 'Cluster & BGP');
  await page.getByRole('button', { name: 'Set up BGP' }).click();
  const form = page.getByRole('form', { name: 'BGP settings' });
  await form.getByLabel('AS number', { exact: true }).fill('65001');
  await form.getByLabel(/^Router ID/).fill('0.0.0.0');
  await form.getByLabel('Every enabled service’s VIP').uncheck();
  await form.getByLabel('Only these VIPs').fill(SERVICE.address);
  await form.getByRole('button', { name: 'Add neighbor' }).click();
  const neighbor = form.getByRole('group', { name: 'Neighbor 1' });
  await neighbor.getByLabel('Router address').fill('192.0.2.1');
  await neighbor.getByLabel('Router’s AS number').fill('65000');
  await neighbor.getByLabel(/^TCP-MD5 password/).fill('k3y-for-md5');
  await form.getByRole('button', { name: 'Save BGP' }).click();

  // The API's own words, at the field; everything typed is still there.
  await expect(form.getByText('0.0.0.0 cannot identify a router; use a unicast IPv4 address')).toBeVisible();
  await expect(neighbor.getByLabel('Router address')).toHaveValue('192.0.2.1');
  await shoot(page, 'bgp-refused', { phone: false });
  await form.getByLabel(/^Router ID/).fill('192.0.2.5');
  await form.getByRole('button', { name: 'Save BGP' }).click();

  await expect(page.getByText('Saved as a pending change')).toBeVisible();
  await expect(page.getByText('192.0.2.1 (AS 65000, password)')).toBeVisible();
  await expect(page.getByText(SERVICE.address, { exact: true })).toBeVisible();
  const stored = await request.get('/api/v1/bgp', { headers });
  expect(await stored.json()).toMatchObject({
    asn: 65001,
    router_id: '192.0.2.5',
    announce: [SERVICE.address],
    neighbors: [{ address: '192.0.2.1', remote_asn: 65000, has_password: true, bfd: true }],
  });
  await shoot(page, 'bgp-saved', { phone: false });
  // The review before a commit says what FRR will do, in an operator's words.
  await page.getByRole('button', { name: 'Review & apply' }).click();
  const review = page.getByRole('dialog', { name: 'Review pending changes' });
  await expect(review.getByText('BGP (AS 65001, router ID 192.0.2.5)')).toBeVisible();
  await expect(review.getByText(`FRR opens sessions to 192.0.2.1 (AS 65000) and announces ${SERVICE.address}/32`)).toBeVisible();
  await shoot(page, 'bgp-review', { phone: false });
  await review.getByRole('button', { name: 'Keep editing' }).click();

  // The stored password is kept by an edit that does not touch it.
  await page.getByRole('button', { name: 'Edit BGP' }).click();
  await expect(neighbor.getByText('One is stored: leave empty to keep it')).toBeVisible();
  await neighbor.getByLabel('Router’s AS number').fill('65002');
  await form.getByRole('button', { name: 'Save BGP' }).click();
  await expect(page.getByText('192.0.2.1 (AS 65002, password)')).toBeVisible();

  await page.getByRole('button', { name: 'Remove BGP' }).click();
  await page.getByRole('dialog', { name: 'Remove this node’s BGP?' }).getByRole('button', { name: 'Remove BGP' }).click();
  await expect(page.getByText(/No BGP settings on this node/)).toBeVisible();
  expect(await (await request.get('/api/v1/bgp', { headers })).json()).toBeNull();
});
