import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { B_PORT } from './ports';

/** A second, fresh API on B_PORT (its own throw-away database), for specs that need a new appliance. */
export const B = `http://127.0.0.1:${B_PORT}`;
const here = dirname(fileURLToPath(import.meta.url));

export async function startFreshApi(env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(resolve(here, 'start-api.sh'), [], {
    env: { ...process.env, ...env, FULCRUM_E2E_PORT: String(B_PORT) },
    detached: true, // its own process group: stopping it stops uvicorn too
    stdio: 'inherit',
  });
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (await fetch(`${B}/api/v1/health`).then((r) => r.ok).catch(() => false)) return child;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the fresh API did not answer within 60 s');
}

export async function stopApi(child: ChildProcess | null): Promise<void> {
  if (!child || child.exitCode !== null || child.pid === undefined) return;
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid, 'SIGTERM');
  await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
}
