/**
 * The course site's build for `npm start`: built into dist/ when its sources (src/, labs/,
 * astro.config.mjs) are newer, one process at a time.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { ROOT_DIR } from '../core/paths.ts';
import { processAlive } from '../core/process-alive.ts';

export const DIST = path.join(ROOT_DIR, 'dist');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    newest = Math.max(newest, fs.statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

function siteIsStale(): boolean {
  const index = path.join(DIST, 'index.html');
  if (!fs.existsSync(index)) return true;
  const built = fs.statSync(index).mtimeMs;
  return ['src', 'labs'].some((dir) => newestMtime(path.join(ROOT_DIR, dir)) > built) || fs.statSync(path.join(ROOT_DIR, 'astro.config.mjs')).mtimeMs > built;
}

async function buildSite(): Promise<void> {
  console.log('Building the course site (about a minute the first time)...');
  const code = await new Promise<number>((resolve) => {
    // Telemetry off: the course's own build is not a developer's Astro project to report on.
    // A production build whatever the shell says: NODE_ENV=test, or Vite's own names (DEV=1, as a
    // vitest worker sets them) give a build whose search says it works only in production builds.
    const env: NodeJS.ProcessEnv = { ...process.env, ASTRO_TELEMETRY_DISABLED: '1', NODE_ENV: 'production' };
    for (const name of ['MODE', 'DEV', 'PROD', 'SSR', 'BASE_URL']) delete env[name];
    // Built from a test run's global setup, it must not look like a test to Vite either.
    for (const name of Object.keys(env)) if (name.startsWith('VITEST')) delete env[name];
    const child = spawn(process.execPath, [path.join(ROOT_DIR, 'node_modules/astro/bin/astro.mjs'), 'build', '--silent'], { cwd: ROOT_DIR, stdio: 'inherit', env });
    child.on('close', (c) => resolve(c ?? 1));
  });
  if (code !== 0) throw new KafkaIqError('INTERNAL', `The site build failed (exit ${code}): see the output above, fix it, then run 'npm start' again.`);
}

/** Beside dist/, whatever KAFKAIQ_STATE_DIR a server was given: it guards that one folder. */
const BUILD_LOCK = path.join(ROOT_DIR, '.site-build.lock');

/**
 * Builds the site if it is stale, one server at a time: two servers started together from one
 * checkout (a second lab server, parallel test files) would otherwise build into the same dist/
 * at once and serve each other's half-written files. The lock file names the builder's pid; a
 * lock whose builder is gone is taken over.
 */
export async function buildSiteIfStale(force: boolean): Promise<void> {
  if (!force && !siteIsStale()) return;
  let announced = false;
  for (;;) {
    try {
      fs.writeFileSync(BUILD_LOCK, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(fs.readFileSync(BUILD_LOCK, 'utf8'));
      if (!Number.isInteger(holder) || holder <= 0 || !processAlive(holder)) {
        fs.rmSync(BUILD_LOCK, { force: true });
        continue;
      }
      if (!announced) console.log(`Waiting for another KafkaIQ server (pid ${holder}) to finish building the site...`);
      announced = true;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  try {
    // After a wait the other server has built it: stale no more.
    if (force ? !announced : siteIsStale()) await buildSite();
  } finally {
    fs.rmSync(BUILD_LOCK, { force: true });
  }
}

