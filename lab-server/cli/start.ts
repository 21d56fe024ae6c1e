/**
 * `npm start`: the whole course on one port. Uses KAFKA_BROKERS or a running KafkaIQ broker, or
 * starts one; builds the site when sources are newer than dist/; serves site and lab server.
 */
import { parseArgs } from 'node:util';
import { ClusterPool } from '../broker/cluster-pool.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { redactUrl } from '../db/pool.ts';
import { CLASS_VIEW_PATH, instructorTokenFromEnv } from '../server/class-view.ts';
import { sandboxStartCheck } from '../runner/program/sandbox/policy.ts';
import { listenAddressFromEnv, startLabBackend, stopOnSignals } from './lab-backend.ts';
import { buildSiteIfStale, DIST } from './site-build.ts';

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
    if (!values['no-build']) await buildSiteIfStale(values.rebuild);
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
