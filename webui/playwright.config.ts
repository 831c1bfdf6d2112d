import { defineConfig } from '@playwright/test';
import { A_JOURNAL_DIR, A_NOTIFY_FIFO, A_PORT as port } from './e2e/ports';

// Debian's Chromium (apt-get install chromium): browser downloads are not possible here.
const chromium = process.env.CHROMIUM ?? '/usr/bin/chromium';

export default defineConfig({
  testDir: 'e2e',
  // The tests share one real API and database and build on each other's state, in order.
  fullyParallel: false,
  workers: 1,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 7_000 },
  reporter: [['list']],
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: chromium,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
    trace: 'off',
    actionTimeout: 7_000,
  },
  webServer: {
    command: `FULCRUM_E2E_PORT=${port} FULCRUM_NOTIFY_FIFO=${A_NOTIFY_FIFO} FULCRUM_JOURNAL_DIRECTORY=${A_JOURNAL_DIR} ./e2e/start-api.sh`,
    url: `http://127.0.0.1:${port}/api/v1/health`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
