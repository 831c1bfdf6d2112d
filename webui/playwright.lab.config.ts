import { defineConfig } from '@playwright/test';

// The e2e run against `make demo`'s HA pair in the VM lab (real IPVS, keepalived, traffic):
// webui/e2e-lab/run starts the demo, then this, with the demo's URLs and password.
const chromium = process.env.CHROMIUM ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: 'e2e-lab',
  // Its own: Playwright empties its output folder as it starts, and make test may run the dashboard's
  // host specs (test-results/) while this one is still going.
  outputDir: 'test-results-lab',
  fullyParallel: false,
  workers: 1,
  retries: 0,
  // Commits, health checks and the stats stream run in an emulated VM: minutes, not seconds.
  timeout: 600_000,
  expect: { timeout: 30_000 },
  reporter: [['list']],
  use: {
    baseURL: process.env.FULCRUM_LAB_URL ?? 'http://127.0.0.1:18180',
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
    trace: 'off',
    actionTimeout: 30_000,
  },
});
