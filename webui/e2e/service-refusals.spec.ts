import { expect, test } from '@playwright/test';
import { ADMIN, adminHeaders, announceableService, HOOK_TIMEOUT, login, shoot } from './helpers';

// A refused delete is shown where it was asked for, and nothing is lost: the service stays.

const SERVICE = announceableService('announced', '192.0.2.77', '198.51.100.77');
const BGP = {
  asn: 65001,
  router_id: '192.0.2.5',
  neighbors: [{ address: '192.0.2.1', remote_asn: 65000 }],
  announce: [SERVICE.address],
};

let headers: Record<string, string> = {};
let serviceId: number | null = null;

test.beforeAll(async ({ request }) => {
  test.setTimeout(HOOK_TIMEOUT);
  headers = await adminHeaders(request);
  const created = await request.post('/api/v1/services', { headers, data: SERVICE });
  expect(created.status(), await created.text()).toBe(201);
  serviceId = ((await created.json()) as { id: number }).id;
  const bgp = await request.put('/api/v1/bgp', { headers, data: BGP });
  expect(bgp.status(), await bgp.text()).toBe(200);
});

test.afterAll(async ({ request }) => {
  test.setTimeout(HOOK_TIMEOUT);
  // Back to where the other specs expect the candidate: no BGP, no such service.
  expect([204, 404]).toContain((await request.delete('/api/v1/bgp', { headers })).status());
  if (serviceId !== null) expect([204, 404]).toContain((await request.delete(`/api/v1/services/${serviceId}`, { headers })).status());
});

test('deleting a service whose VIP BGP announces by its list: the refusal is shown, the service stays', async ({ page, request }) => {
  await login(page, ADMIN);
  await page.goto(`/services/${serviceId}`);
  await expect(page.getByRole('heading', { level: 2, name: SERVICE.name, exact: true })).toBeVisible();
  await page.getByRole('button', { name: 'Delete', exact: true }).click();
  await page.getByRole('dialog', { name: `Delete service ${SERVICE.name}?` }).getByRole('button', { name: 'Delete' }).click();

  const refusal = page.getByRole('alert').filter({ hasText: `Could not delete ${SERVICE.name}` });
  await expect(refusal).toBeVisible();
  await expect(refusal).toContainText('bgp.announce');
  await shoot(page, 'service-delete-refused', { phone: false });
  await expect(page.getByRole('dialog')).toBeHidden();
  await expect(page.getByRole('heading', { level: 2, name: SERVICE.name, exact: true })).toBeVisible();
  const stored = await request.get(`/api/v1/services/${serviceId}`, { headers });
  expect(stored.status()).toBe(200);
});
