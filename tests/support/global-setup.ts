import type { TestProject } from 'vitest/node';
import { CLUSTER_POOL_ENV, ClusterPool, serveClusterPool } from '../../lab-server/broker/cluster-pool.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    brokers: string[];
  }
}

/**
 * Global setup of the kafka tier (after pinned-node.ts): starts the teaching broker for the whole
 * run unless KAFKA_BROKERS names a cluster. The 3-node cluster of the failover labs starts only
 * when a test first asks for it (through the pool this process serves), once per run, and stops
 * with the run.
 */
export default async function setup(project: TestProject) {
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
