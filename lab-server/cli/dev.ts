/**
 * `npm run dev`: the authoring loop. Astro's dev server (lessons and components hot-reloaded)
 * with the lab server attached: the browser talks to one origin, and Vite's proxy carries `/ws`
 * and `/api` to a lab server on a private loopback port. Lab folders are re-read when they
 * change; a lab.ts mistake is one line here and Astro's error overlay in the page, never a crash.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ClusterPool } from '../broker/cluster-pool.ts';
import { describeError, KafkaIqError } from '../core/errors.ts';
import { LABS_DIR, ROOT_DIR } from '../core/paths.ts';
import { forgetLab, loadLab } from '../labs/load-lab.ts';
import { createLabSession } from '../runner/lab-session.ts';
import { openAttemptStore } from '../server/attempt-store.ts';
import { ATTEMPTS_API_PREFIX } from '../server/attempts-api.ts';
import { CLASS_VIEW_PATH, instructorTokenFromEnv } from '../server/class-view.ts';
import { createLabServer, WS_PATH } from '../server/lab-server.ts';

/** Changes within this window (an editor's save = several events) are one reload. */
const LAB_RELOAD_DEBOUNCE_MS = 150;

async function main(): Promise<void> {
  const port = Number(process.env.PORT ?? 4321);
  const host = process.env.HOST ?? '127.0.0.1';
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new KafkaIqError('INVALID_INPUT', `PORT must be a port number, got "${process.env.PORT}".`);
  console.log(`KafkaIQ dev on Node ${process.version} (pinned)`);
  const clusters = new ClusterPool({ log: (line) => console.log(line) });
  const cluster = await clusters.get('single');
  console.log(`Kafka: ${cluster.brokers.join(',')} (${cluster.origin})`);
  const store = openAttemptStore();
  // Loopback only, on a free port: nothing but the dev server's proxy is meant to reach it.
  const labServer = await createLabServer({
    port: 0,
    host: '127.0.0.1',
    staticDir: path.join(ROOT_DIR, 'dist'),
    createSession: (options) => createLabSession({ ...options, cluster, clusters }),
    store,
    cluster: { brokers: cluster.brokers.join(','), brokerFaults: cluster.control !== null },
    instructorToken: instructorTokenFromEnv(),
  });
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
        },
      },
    },
  }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE' || /port \d+ is (already )?in use/i.test(err.message)) throw new KafkaIqError('PORT_TAKEN', `Port ${port} is taken: stop the other program or choose another with PORT=4322 npm run dev.`);
    throw err;
  });
  console.log(`\nKafkaIQ dev server: http://${host}:${site.address.port}/  (lessons reload as you edit; Ctrl-C to stop)`);

  const shutdown = async () => {
    stopWatching();
    await site.stop();
    await labServer.close();
    store.close();
    await clusters.close();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
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
