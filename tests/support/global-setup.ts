import fs from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { CLUSTER_POOL_ENV, ClusterPool, serveClusterPool } from '../../lab-server/broker/cluster-pool.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    brokers: string[];
  }
}

/**
 * Starts the teaching broker for the whole run unless KAFKA_BROKERS names a cluster. The 3-node
 * cluster of the failover labs starts only when a test first asks for it (through the pool this
 * process serves), once per run, and stops with the run.
 */
export default async function setup(project: TestProject) {
  // Everything runs on the Node pinned in package.json (npm test puts it first on PATH).
  const pinned = JSON.parse(fs.readFileSync(path.join(ROOT_DIR, 'package.json'), 'utf8')).optionalDependencies.node;
  if (process.version !== `v${pinned}`) {
    throw new Error(`The tests run on the pinned Node ${pinned}, not ${process.version}: start them with 'npm test' (after 'npm install').`);
  }
  const log = (line: string) => console.log(`[broker] ${line}`);
  const pool = new ClusterPool({ log, poolUrl: '' });
  const cluster = await pool.get('single');
  console.log(`[broker] ${cluster.origin} ${cluster.brokers.join(',')}`);
  const served = await serveClusterPool(pool);
  project.provide('brokers', cluster.brokers);
  // Test workers start after this function: they inherit the address (and find the control file),
  // and their ClusterPools ask ours for any other cluster.
  process.env.KAFKA_BROKERS = cluster.brokers.join(',');
  process.env[CLUSTER_POOL_ENV] = served.url;
  return async () => {
    await served.close();
    await pool.close();
  };
}
