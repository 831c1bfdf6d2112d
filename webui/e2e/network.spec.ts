import { hostname } from 'node:os';
import { expect, test, type APIRequestContext, type Page } from '@playwright/test';
import type { ClockStatus, KernelInterface, KernelRoute, NetworkConfig, Status } from '../src/client/types.gen';
import { ADMIN, apiToken, HOOK_TIMEOUT, login, nav, shoot } from './helpers';

test.describe.configure({ mode: 'serial' });

// A viewer of this spec's own: the dashboard spec creates VIEWER through the Users page.
const READER = { username: 'nora', password: 'network viewer passphrase' };

let adminToken: string | null = null;

/**
 * The API as the admin sees it, outside the browser: what was saved, what is pending. One sign-in
 * for the spec: each costs a password hash, which the browser's own sign-ins wait behind.
 */
async function api(request: APIRequestContext) {
  adminToken ??= await apiToken(request, ADMIN);
  const headers = { Authorization: `Bearer ${adminToken}` };
  const get = async (path: string): Promise<unknown> => {
    const response = await request.get(`/api/v1${path}`, { headers });
    expect(response.status(), path).toBe(200);
    return response.json();
  };
  return {
    headers,
    network: async () => (await get('/network')) as NetworkConfig | null,
    status: async () => (await get('/status')) as Status,
    interfaces: async () => (await get('/network/interfaces')) as KernelInterface[],
    routes: async () => (await get('/network/routes')) as KernelRoute[],
    clock: async () => (await get('/network/clock')) as ClockStatus,
  };
}

/**
 * Back to where the spec starts (also after a failure, and before each repetition): the network
 * unmanaged in the candidate and in what runs, nothing awaiting confirmation.
 */
async function unmanage(request: APIRequestContext) {
  const { headers, network, status } = await api(request);
  if ((await network()) !== null) expect((await request.delete('/api/v1/network', { headers })).status()).toBe(204);
  if ((await status()).pending_changes) {
    const commit = await request.post('/api/v1/revisions', { headers, data: { message: 'network spec: clean up' } });
    expect(commit.status()).toBe(201);
  }
  const awaiting = (await status()).awaiting_confirm;
  if (awaiting !== null) expect((await request.post(`/api/v1/revisions/${awaiting}/confirm`, { headers })).status()).toBe(200);
}


test.beforeAll(async ({ request }) => {
  test.setTimeout(HOOK_TIMEOUT);
  // Runs alone or after the other specs: the admin may exist already (409).
  expect([201, 409]).toContain((await request.post('/api/v1/setup', { data: ADMIN })).status());
  const { headers } = await api(request);
  const created = await request.post('/api/v1/users', { headers, data: { ...READER, role: 'viewer' } });
  expect([201, 409]).toContain(created.status());
  await unmanage(request);
});

test.afterAll(async ({ request }) => {
  test.setTimeout(HOOK_TIMEOUT);
  await unmanage(request);
});

/** Save the editor's form; the API's answer decides what shows. */
async function save(page: Page) {
  await page.getByRole('button', { name: 'Save network' }).click();
}

test('the kernel’s interfaces, live, and the clock as the kernel has it', async ({ page, request }) => {
  await login(page, ADMIN);
  await nav(page, 'Network');
  const table = page.getByRole('table', { name: 'Interfaces' });
  // Every interface the API reads from this host is listed, loopback with its address and prefix.
  const { interfaces, clock, routes } = await api(request);
  for (const { name } of await interfaces()) await expect(table.getByRole('row', { name: new RegExp(`^${name}\\b`) })).toBeVisible();
  await expect(page.getByTestId('addresses-lo')).toContainText('127.0.0.1/8');
  await expect(page.getByTestId('link-lo')).toHaveText('up');
  // Live: the page's own requests go over lo, so its received bytes grow between polls.
  const bytes = () => page.getByTestId('rx-lo').getAttribute('data-bytes').then(Number);
  const first = await bytes();
  await expect.poll(bytes, { timeout: 15_000 }).toBeGreaterThan(first);
  // The clock's state as the API reads it from the kernel (adjtimex).
  // The kernel's routes, each in the routes table (one row per route: the gateway is in its name).
  const routesTable = page.getByRole('table', { name: 'Routes in the kernel' });
  const kernelRoutes = await routes();
  expect(kernelRoutes.length).toBeGreaterThan(0); // this host's own network at least
  await expect(routesTable.getByRole('row')).toHaveCount(kernelRoutes.length + 1); // and the header
  const { synchronised } = await clock();
  await expect(page.getByTestId('clock-sync')).toHaveText(synchronised ? 'synchronised' : 'not synchronised');
  await expect(page.getByTestId('network-unmanaged')).toBeVisible();
  await shoot(page, 'network-unmanaged');
});

test('take-over: bad values are refused at their field and change nothing, then the plan and the confirm countdown', async ({ page, request }) => {
  test.slow(); // several saves and a commit on 2 shared cores
  const { network, status, interfaces, routes } = await api(request);
  await login(page, ADMIN);
  await nav(page, 'Network');
  await page.getByRole('button', { name: 'Manage this node’s network' }).click();
  const form = page.getByRole('form', { name: 'Network settings' });
  // Prefilled from the kernel: each physical NIC by name and MAC.
  const physical = (await interfaces()).filter((i) => i.kind === 'physical');
  expect(physical.length).toBeGreaterThan(0);
  for (const [index, nic] of physical.entries()) {
    const fields = form.getByRole('group', { name: `NIC ${index + 1}` });
    await expect(fields.getByLabel('Name')).toHaveValue(nic.name);
    await expect(fields.getByLabel('MAC address')).toHaveValue(nic.mac);
  }
  // The host name it has (the API runs on this machine), where it is one the model takes.
  const host = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/.test(hostname()) ? hostname() : 'fulcrum';
  await expect(form.getByLabel('Host name')).toHaveValue(host);
  // And the main table's default gateway where one was configured (not one DHCP or an RA brought).
  const byHand = (await routes()).find((r) => r.destination === '0.0.0.0/0' && r.table === 254 && ['boot', 'static'].includes(r.protocol));
  await expect(form.getByLabel('Default gateway (IPv4)')).toHaveValue(byHand?.gateway ?? '');
  const pendingBefore = (await status()).pending_changes;

  // A VLAN ID out of 802.1Q's range: at the VLAN's ID field.
  await form.getByRole('button', { name: 'Add VLAN' }).click();
  const vlan = form.getByRole('group', { name: 'VLAN 1' });
  await vlan.getByLabel('Name').fill('tag100');
  await vlan.getByLabel('VLAN ID').fill('5000');
  await save(page);
  await expect(vlan.getByText('less than or equal to 4094')).toBeVisible();

  // A default gateway on no connected network: at the gateway field.
  await vlan.getByLabel('VLAN ID').fill('100');
  await form.getByLabel('Default gateway (IPv4)').fill('198.51.100.1');
  await save(page);
  await expect(form.getByText('198.51.100.1 is on no connected network')).toBeVisible();
  await expect(vlan.getByText('less than or equal to 4094')).toBeHidden();

  // balance-rr without the override: at the bond's mode, with the reason.
  await form.getByLabel('Default gateway (IPv4)').fill('');
  await form.getByRole('button', { name: 'Add NIC' }).click();
  const spare = form.getByRole('group', { name: `NIC ${physical.length + 1}` });
  await spare.getByLabel('Name').fill('spare0');
  await spare.getByLabel('MAC address').fill('52:54:00:00:99:01');
  await form.getByRole('button', { name: 'Add bond' }).click();
  const bond = form.getByRole('group', { name: 'Bond 1' });
  // The pills field lies over the MultiSelect's input: the click lands on the field as a person's would.
  await bond.getByRole('textbox', { name: 'Members' }).click({ force: true });
  await page.getByRole('option', { name: 'spare0' }).click();
  await page.keyboard.press('Escape');
  await bond.getByRole('textbox', { name: 'Mode' }).click();
  await page.getByRole('option', { name: /^balance-rr/ }).click();
  await save(page);
  await expect(bond.getByText(/packets of one flow round robin.*TCP collapses/)).toBeVisible();
  await shoot(page, 'network-refused', { phone: false });

  // Nothing of it was saved.
  expect(await network()).toBeNull();
  expect((await status()).pending_changes).toBe(pendingBefore);

  // Without the bond and its NIC the network saves: a pending change, shown as managed.
  await bond.getByRole('button', { name: 'Remove Bond 1' }).click();
  await spare.getByRole('button', { name: `Remove NIC ${physical.length + 1}` }).click();
  await save(page);
  await expect(page.getByText('Saved as a pending change')).toBeVisible();
  const management = (await network())?.management_interface ?? '';
  await expect(page.getByTestId('managed-management')).toHaveText(management);
  await expect(page.getByRole('table', { name: 'Managed interfaces' }).getByRole('row', { name: /tag100/ })).toContainText('VLAN 100 on');

  // The plan says what the commit does: the network taken over, the management address moving.
  await page.getByRole('region', { name: 'Pending changes' }).getByRole('button', { name: 'Review & apply' }).click();
  const dialog = page.getByRole('dialog', { name: 'Review pending changes' });
  await expect(dialog.getByText(/Fulcrum takes over this node's network/)).toBeVisible();
  await expect(dialog.getByText(/the management address moves: unmanaged → /)).toBeVisible();
  await expect(dialog.getByText('network: interface tag100')).toBeVisible();
  await expect(dialog.getByLabel('Roll back automatically unless I confirm within')).toBeChecked();
  await dialog.getByRole('button', { name: /^Apply/ }).click();
  await expect(dialog.getByText(/Revision \d+ applied on probation/)).toBeVisible();
  await dialog.getByRole('button', { name: 'Close' }).click();
  await expect(page.getByTestId('confirm-countdown')).toHaveText(/\d+ s/);
  await shoot(page, 'network-managed');
  await page.getByRole('button', { name: /^Confirm revision/ }).click();
  await expect(page.getByTestId('confirm-countdown')).toBeHidden();

  // An address that disappears from the management interface: said in the plan.
  await page.getByRole('button', { name: 'Edit network' }).click();
  const managementNic = form.getByRole('group', { name: `NIC ${physical.findIndex((n) => n.name === management) + 1}` });
  const addresses = managementNic.getByLabel('Static addresses');
  const kept = (await addresses.inputValue()).split(', ');
  expect(kept.length, 'the management NIC has a static address here').toBeGreaterThan(0);
  await addresses.fill([...kept.slice(1), '192.0.2.77/24'].join(', '));
  await save(page);
  await expect(page.getByText('Saved as a pending change')).toBeVisible();
  await page.getByRole('region', { name: 'Pending changes' }).getByRole('button', { name: 'Review & apply' }).click();
  await expect(dialog.getByText(`Addresses that disappear: ${kept[0]}`)).toBeVisible();
  await expect(dialog.getByText(/the management address moves: /)).toBeVisible();
  await dialog.getByRole('button', { name: 'Keep editing' }).click();
});

test('a viewer reads the network but cannot change it', async ({ page }) => {
  await login(page, READER);
  await nav(page, 'Network');
  await expect(page.getByRole('table', { name: 'Interfaces' }).getByRole('row', { name: /^lo\b/ })).toBeVisible();
  await expect(page.getByTestId('managed-management')).toBeVisible();
  await expect(page.getByText('Only an administrator can change this node’s network.')).toBeVisible();
  await expect(page.getByRole('button', { name: 'Edit network' })).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Stop managing' })).toHaveCount(0);
});
