import { expect, test, type Page } from '@playwright/test';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ADMIN, login, nav, shoot } from './helpers';
import { B, startFreshApi, stopApi } from './peer';

// System → Firmware against a fresh API given a RAUC system.conf (the appliance's own, its keyring
// the development CA) and the real RAUC service on a private D-Bus standing in for the system bus,
// as tests/api/test_firmware.py does. Bundles are made with the real `rauc bundle` (tests/lab/bundles.py).
// The API reads system.conf on every request: before it is put in place the node is not A/B.
test.describe.configure({ mode: 'serial' });
test.slow(); // bundles signed here, and a second API with RAUC on 2 shared cores

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');

type Fixture = { work: string; conf: string; service_conf: string; good: string; other_key: string };

/** Bundles (good; signed by another CA's key), and the RAUC service's system.conf: the API's is a copy made later. */
function makeFixture(): Fixture {
  const script = `
import json, shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, ${JSON.stringify(resolve(repo, 'tests'))})
from lab.bundles import DEV_KEYS, make_bundles
work = Path(tempfile.mkdtemp(prefix="fulcrum-e2e-firmware-"))
bundles = make_bundles(work)
rauc = work / "rauc"
rauc.mkdir()
conf = Path(${JSON.stringify(resolve(repo, 'overlay/etc/rauc/system.conf'))}).read_text()
conf = conf.replace("grubenv=/data/boot/grubenv", f"grubenv={work / 'grubenv'}")
conf = conf.replace("data-directory=/data/rauc", f"data-directory={work / 'rauc-data'}")
conf = conf.replace("path=/etc/rauc/keyring.pem", "path=keyring.pem")
(rauc / "service.conf").write_text(conf)
shutil.copy(DEV_KEYS / "ca.cert.pem", rauc / "keyring.pem")
print(json.dumps({"work": str(work), "conf": str(rauc / "system.conf"), "service_conf": str(rauc / "service.conf"),
                  "good": str(bundles.good), "other_key": str(bundles.other_key)}))`;
  return JSON.parse(execFileSync(resolve(repo, '.venv/bin/python'), ['-c', script], { encoding: 'utf8' })) as Fixture;
}

/** A private bus (its address: the first line dbus-daemon prints) and RAUC's service on it, slot A booted. */
async function startRaucService(conf: string): Promise<{ address: string; processes: ChildProcess[] }> {
  const bus = spawn('dbus-daemon', ['--session', '--nofork', '--print-address=1'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [address] = (await once(createInterface({ input: bus.stdout }), 'line')) as [string];
  const service = spawn('rauc', [`--conf=${conf}`, 'service', '--override-boot-slot=A'], {
    env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: address.trim() },
    stdio: 'ignore',
  });
  return { address: address.trim(), processes: [service, bus] };
}

let fixture: Fixture;
let api: ChildProcess | null = null;
let rauc: ChildProcess[] = [];

test.beforeAll(async () => {
  fixture = makeFixture();
  const service = await startRaucService(fixture.service_conf);
  rauc = service.processes;
  api = await startFreshApi({ FULCRUM_RAUC_SYSTEM_CONF: fixture.conf, DBUS_SYSTEM_BUS_ADDRESS: service.address });
  const created = await fetch(`${B}/api/v1/setup`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(ADMIN) });
  expect(created.status).toBe(201);
});

test.afterAll(async () => {
  await stopApi(api);
  for (const child of rauc) child.kill('SIGTERM');
  if (fixture) rmSync(fixture.work, { recursive: true, force: true });
});

async function openFirmwarePage(page: Page) {
  await login(page, ADMIN);
  await nav(page, 'Firmware');
  await expect(page.getByRole('heading', { name: 'Firmware', exact: true })).toBeVisible();
}

async function chooseBundle(page: Page, path: string) {
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), page.getByRole('button', { name: 'Choose a bundle…' }).click()]);
  await chooser.setFiles(path);
}

test('firmware: a node without RAUC says it is not an A/B system and offers no upload', async ({ browser }) => {
  const page = await (await browser.newContext({ baseURL: B })).newPage();
  await openFirmwarePage(page);
  await expect(page.getByText('Not an A/B system', { exact: true })).toBeVisible();
  await expect(page.getByTestId('firmware-detail')).toHaveText(`not an A/B system: ${fixture.conf} does not exist`);
  await expect(page.getByRole('button', { name: 'Upload' })).toHaveCount(0);
  await shoot(page, 'system-firmware-not-ab', { phone: false });
});

test('firmware: the slots are listed; a good bundle waits to be installed, a foreign one is refused, delete', async ({ browser }) => {
  copyFileSync(fixture.service_conf, fixture.conf); // now this node is an A/B system
  const page = await (await browser.newContext({ baseURL: B })).newPage();
  await openFirmwarePage(page);

  // The RAUC service may still be starting: the page then says why the slots are unknown.
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId('slot-rootfs.0')).toBeVisible({ timeout: 1_000 });
  }).toPass({ timeout: 30_000 });
  const slotA = page.getByTestId('slot-rootfs.0');
  await expect(slotA).toContainText('A');
  await expect(slotA.getByText('booted')).toBeVisible();
  await expect(page.getByTestId('slot-rootfs.1')).toContainText('inactive');
  await expect(page.getByTestId('slot-rootfs.1')).toContainText('/dev/disk/by-partlabel/root-b');
  await expect(page.getByText('fulcrum-x86_64')).toBeVisible();
  await expect(page.getByTestId('waiting-bundle')).toHaveCount(0);

  await chooseBundle(page, fixture.good);
  await expect(page.getByTestId('chosen-bundle')).toContainText('good.raucb');
  // A slow uplink (Chromium's own throttling), so the progress can be seen on a 76 kB bundle.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: 20_000 });
  await page.getByRole('button', { name: 'Upload' }).click();
  await expect(page.getByLabel('Upload progress')).toBeVisible();
  await expect(page.getByText(/^Uploading: [1-9]\d?%$/)).toBeVisible();
  await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 });
  const waiting = page.getByTestId('waiting-bundle');
  await expect(waiting).toBeVisible({ timeout: 30_000 });
  await expect(waiting).toContainText('2.0.0');
  await expect(waiting).toContainText('Fulcrum development bundle signer');
  await expect(page.getByTestId('chosen-bundle')).toHaveText('No file chosen');
  await shoot(page, 'system-firmware');

  await chooseBundle(page, fixture.other_key);
  await page.getByRole('button', { name: 'Upload' }).click();
  await expect(page.getByText('the bundle is not signed by a key this appliance trusts')).toBeVisible({ timeout: 30_000 });
  await expect(waiting).toContainText('2.0.0'); // the refused one left the waiting one alone
  await shoot(page, 'system-firmware-refused', { phone: false });

  await waiting.getByRole('button', { name: 'Delete the waiting bundle' }).click();
  await page.getByRole('button', { name: 'Delete bundle' }).click();
  await expect(waiting).toHaveCount(0);
  await page.reload();
  await expect(page.getByTestId('slot-rootfs.0')).toBeVisible();
  await expect(page.getByTestId('waiting-bundle')).toHaveCount(0);
});

test('firmware: Install asks first; RAUC cannot finish on this host, the page says why and the bundle still waits', async ({ browser }) => {
  const page = await (await browser.newContext({ baseURL: B })).newPage();
  await openFirmwarePage(page);
  await expect(page.getByTestId('slot-rootfs.0')).toBeVisible();
  await chooseBundle(page, fixture.good);
  await page.getByRole('button', { name: 'Upload' }).click();
  const waiting = page.getByTestId('waiting-bundle');
  await expect(waiting).toContainText('2.0.0', { timeout: 30_000 });

  await waiting.getByRole('button', { name: 'Install' }).click();
  const dialog = page.getByRole('dialog', { name: 'Install 2.0.0 into slot B?' });
  await expect(dialog).toContainText('This node keeps serving from slot A while it does');
  await dialog.getByRole('button', { name: 'Install' }).click();

  // RAUC's service takes the bundle, then cannot mount it: this host has no device-mapper (the image
  // test installs for real). The page polls while RAUC works, and shows the outcome without a reload.
  const failed = page.getByRole('alert', { name: 'Installing 2.0.0 failed; the running system was not touched' });
  await expect(failed).toBeVisible({ timeout: 60_000 });
  await expect(failed).toContainText('Failed mounting bundle: Failed to open /dev/mapper/control');
  await expect(waiting).toContainText('2.0.0'); // to try again
  await expect(waiting.getByRole('button', { name: 'Install' })).toBeEnabled();

  // The outcome is the API's record, not the page's memory.
  await page.reload();
  await expect(failed).toBeVisible();
  await expect(page.getByTestId('upgrade').getByRole('row', { name: 'Into slot B' })).toBeVisible();
  await expect(waiting).toContainText('2.0.0');
  await shoot(page, 'system-firmware-install-failed');
});
