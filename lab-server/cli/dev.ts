/**
 * `npm run dev`: the authoring loop. Astro's dev server (lessons and components hot-reloaded)
 * with the lab server attached: the browser talks to one origin, and Vite's proxy carries `/ws`
 * and `/api` to a lab server on a private loopback port. Lab folders are re-read when they
 * change; a lab.ts mistake is one line here and Astro's error overlay in the page, never a crash.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ClusterPool } from '../broker/cluster-pool.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { PROGRESS_PATH } from '../../src/shared/progress.ts';
import { LABS_DIR, ROOT_DIR } from '../core/paths.ts';
import { forgetLab, loadLab } from '../labs/load-lab.ts';
import { ATTEMPTS_API_PREFIX } from '../server/attempts-api.ts';
import { CLASS_VIEW_PATH, instructorTokenFromEnv } from '../server/class-view.ts';
import { WS_PATH } from '../server/lab-server.ts';
import { listenAddressFromEnv, startLabBackend, stopOnSignals } from './lab-backend.ts';

/** Changes within this window (an editor's save = several events) are one reload. */
const LAB_RELOAD_DEBOUNCE_MS = 150;

async function main(): Promise<void> {
  const { port, host } = listenAddressFromEnv();
  const instructorToken = instructorTokenFromEnv();
  console.log(`KafkaIQ dev on Node ${process.version} (pinned)`);
  const clusters = new ClusterPool({ log: (line) => console.log(line) });
  const cluster = await clusters.get('single');
  console.log(`Kafka: ${cluster.brokers.join(',')} (${cluster.origin})`);
  // Loopback only, on a free port: nothing but the dev server's proxy is meant to reach it.
  const backend = await startLabBackend({ clusters, cluster, port: 0, host: '127.0.0.1', staticDir: path.join(ROOT_DIR, 'dist'), command: 'npm run dev', instructorToken });
  const labServer = backend.server;
  const stopWatching = watchLabs();

  process.env.ASTRO_TELEMETRY_DISABLED = '1';
  const { dev } = await import('astro');
  const site = await dev({
    root: ROOT_DIR,
    server: { port, host },
    vite: {
      server: {
        // A taken port is an error naming the fix, not a silent move to the next port.
        strictPort: true,
        // The proxy keeps the browser's Host header, so the lab server sees its own origin.
        proxy: {
          [WS_PATH]: { target: labServer.url, ws: true },
          [ATTEMPTS_API_PREFIX]: { target: labServer.url },
          [CLASS_VIEW_PATH]: { target: labServer.url },
          [PROGRESS_PATH]: { target: labServer.url },
          '/auth': { target: labServer.url },
        },
      },
    },
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE' || /port \d+ is (already )?in use/i.test(err.message)) throw new KafkaIqError('PORT_TAKEN', `Port ${port} is taken: stop the other program or choose another with PORT=4322 npm run dev.`);
    throw err;
  });
  // The proxy keeps the browser's Host and Origin: the lab server must know the dev server's origins.
  const devHosts = ['localhost', '127.0.0.1', '[::1]', ...(['0.0.0.0', '::', 'localhost', '127.0.0.1', '::1'].includes(host) ? [] : [host.includes(':') ? `[${host}]` : host])];
  labServer.allowOrigins(devHosts.map((name) => `http://${name}:${site.address.port}`));
  console.log(`\nKafkaIQ dev server: http://${host}:${site.address.port}/  (lessons reload as you edit; Ctrl-C to stop)`);

  stopOnSignals(async () => {
    stopWatching();
    await site.stop();
    await backend.close();
    await clusters.close();
  });
}

/** Re-reads a lab when a file in its folder changes, and says in one line whether it still loads. */
function watchLabs(): () => void {
  const pending = new Map<string, NodeJS.Timeout>();
  const watcher = fs.watch(LABS_DIR, { recursive: true }, (_event, file) => {
    const id = file?.split(path.sep)[0];
    if (!id || !fs.existsSync(path.join(LABS_DIR, id, 'lab.ts'))) return;
    clearTimeout(pending.get(id));
    pending.set(
      id,
      setTimeout(() => {
        pending.delete(id);
        forgetLab(id);
        loadLab(id).then(
          () => console.log(`[labs] ${id}: reloaded`),
          (err) => console.log(`[labs] ${id}: ${describeError(err)}`),
        );
      }, LAB_RELOAD_DEBOUNCE_MS),
    );
  });
  return () => watcher.close();
}

main().catch((err) => {
  console.error(`kafkaiq: ${describeError(err)}`);
  process.exit(err instanceof KafkaIqError && !err.isInfrastructure ? 1 : 2);
});
