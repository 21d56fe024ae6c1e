/**
 * `npm start`: the whole course on one port. Uses KAFKA_BROKERS or a running KafkaIQ broker, or
 * starts one; builds the site when sources are newer than dist/; serves site and lab server.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ClusterPool } from '../broker/cluster-pool.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { ROOT_DIR, STATE_DIR } from '../core/paths.ts';
import { processAlive } from '../core/process-alive.ts';
import { redactUrl } from '../db/pool.ts';
import { CLASS_VIEW_PATH, instructorTokenFromEnv } from '../server/class-view.ts';
import { sandboxStartCheck } from '../runner/program/sandbox/policy.ts';
import { listenAddressFromEnv, startLabBackend, stopOnSignals } from './lab-backend.ts';

const DIST = path.join(ROOT_DIR, 'dist');

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
    const child = spawn(process.execPath, [path.join(ROOT_DIR, 'node_modules/astro/bin/astro.mjs'), 'build', '--silent'], { cwd: ROOT_DIR, stdio: 'inherit', env });
    child.on('close', (c) => resolve(c ?? 1));
  });
  if (code !== 0) throw new KafkaIqError('INTERNAL', `The site build failed (exit ${code}): see the output above, fix it, then run 'npm start' again.`);
}

const BUILD_LOCK = path.join(STATE_DIR, 'site-build.lock');

/**
 * Builds the site if it is stale, one server at a time: two servers started together from one
 * checkout (a second lab server, parallel test files) would otherwise build into the same dist/
 * at once and serve each other's half-written files. The lock file names the builder's pid; a
 * lock whose builder is gone is taken over.
 */
async function buildSiteIfStale(force: boolean): Promise<void> {
  fs.mkdirSync(STATE_DIR, { recursive: true });
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

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { rebuild: { type: 'boolean', default: false }, 'no-build': { type: 'boolean', default: false } } });
  const { port, host } = listenAddressFromEnv();
  const instructorToken = instructorTokenFromEnv();
  // At once, before a broker starts: no unsandboxed programs for anyone beyond loopback.
  sandboxStartCheck(host);

  // The runtime every learner program runs on (pinned in package.json; see bin/pinned-node.mjs).
  console.log(`KafkaIQ on Node ${process.version} (pinned), ${process.platform}-${process.arch}`);
  // The single broker now; the 3-node cluster of the failover labs when a learner first needs it.
  const clusters = new ClusterPool({ log: (line) => console.log(line) });
  const cluster = await clusters.get('single');
  const origin = { external: 'using KAFKA_BROKERS', reused: 'using the KafkaIQ broker already running', started: 'started' }[cluster.origin];
  console.log(`Kafka: ${cluster.brokers.join(',')} (${origin})`);
  console.log(
    `Database labs: ${process.env.DATABASE_URL ? `a database per attempt on DATABASE_URL (${redactUrl(process.env.DATABASE_URL)})` : 'an embedded PostgreSQL (PGlite) per attempt, started on first use (set DATABASE_URL for a real server)'}`,
  );
  try {
    if (!values['no-build'] && (values.rebuild || siteIsStale())) await buildSiteIfStale(values.rebuild);
    const backend = await startLabBackend({ clusters, cluster, port, host, staticDir: DIST, command: 'npm start', instructorToken });
    const { url } = backend.server;
    if (backend.classView) console.log(`Class view: ${url}${CLASS_VIEW_PATH}?token=<KAFKAIQ_INSTRUCTOR_TOKEN>`);
    console.log(`\nKafkaIQ is ready: ${url}/  (Ctrl-C to stop)`);
    stopOnSignals(async () => {
      console.log('\nStopping...');
      await backend.close();
      await clusters.close();
    });
  } catch (err) {
    await clusters.close();
    throw err;
  }
}

main().catch((err) => {
  console.error(`kafkaiq: ${describeError(err)}`);
  process.exit(err instanceof KafkaIqError && !err.isInfrastructure ? 1 : 2);
});
