import type { TestProject } from 'vitest/node';
import { connectCluster } from '../../lab-server/broker/cluster.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    brokers: string[];
  }
}

/** Starts the teaching broker for the whole run unless KAFKA_BROKERS names a cluster. */
export default async function setup(project: TestProject) {
  const cluster = await connectCluster({ log: (line) => console.log(`[broker] ${line}`) });
  console.log(`[broker] ${cluster.origin} ${cluster.brokers.join(',')}`);
  project.provide('brokers', cluster.brokers);
  // Test workers start after this function: they inherit the address (and find the control file).
  process.env.KAFKA_BROKERS = cluster.brokers.join(',');
  return async () => {
    await cluster.close();
  };
}
