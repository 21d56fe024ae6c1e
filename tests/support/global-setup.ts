import type { TestProject } from 'vitest/node';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BrokerProcess } from '../../lab-server/broker/broker-process.ts';
import { ClusterPool, serveClusterPool } from '../../lab-server/broker/cluster-pool.ts';
import { classArchiveFile } from '../../lab-server/broker/jvm-flags.ts';
import { defaultBrokerPort } from '../../lab-server/broker/ports.ts';
import { buildSiteIfStale } from '../../lab-server/cli/site-build.ts';
import { listLabIds } from '../../lab-server/labs/load-lab.ts';
import { LANE_PORT_STRIDE, testLanes } from './lane-ports.ts';
import { serveMatrixQueue } from './matrix-queue.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The served pools' URL: a lane's are at `${clusterPool}/lanes/<n>`. */
    clusterPool: string;
    /** The port of lane 1's teaching broker; lane n's is LANE_PORT_STRIDE × (n − 1) above it. */
    firstBrokerPort: number;
    /** KAFKA_BROKERS as the run was given it: every lane then shares that cluster. */
    externalBrokers: string;
    /**
     * The labs the lab matrix grades, listed once before any file runs: a file that adds a lab to
     * labs/ while the run goes on (the scaffold test) must not change how the shards deal them.
     */
    matrixLabs: string[];
    /** The lab matrix's one queue of fixtures, which its shards share (matrix-queue.ts). */
    matrixQueue: string;
  }
}

/**
 * On a fresh checkout the broker's class-data archive does not exist yet, and every broker started
 * without it writes it when it first exits: a first restart then takes 15-20 s longer under load,
 * longer than a grade's clients wait (the 3 lanes' brokers would also race on the one file). One
 * throwaway broker, started and stopped before any lane's, writes it; every later start maps it.
 */
async function writeClassArchive(port: number, log: (line: string) => void): Promise<void> {
  if (process.env.KAFKAIQ_NO_CDS || fs.existsSync(classArchiveFile())) return;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-class-archive-'));
  const broker = new BrokerProcess({ basePort: port, dataDir, heapMb: 256, log });
  try {
    await broker.start();
    await broker.stop();
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  log(fs.existsSync(classArchiveFile()) ? 'class-data archive written' : 'class-data archive not written: brokers start without it');
}

/**
 * Global setup of the kafka tier (after pinned-node.ts). Files run side by side in lanes, one per
 * test worker (see lane.ts): each lane has a teaching broker of its own, because some files
 * restart theirs on purpose, which must not land in another file's grade. This process owns every
 * lane's clusters, started on a lane's first request (the 3-node cluster of the failover labs only
 * when a file of that lane asks for it) and stopped with the run. Lane 1's broker starts now, so a
 * broken Java or a taken port fails the run at once with its one-line error, and so does the site.
 *
 * KAFKA_BROKERS naming a cluster puts every lane on it.
 */
export default async function setup(project: TestProject) {
  const log = (line: string) => console.log(`[broker] ${line}`);
  // Before any test file: KAFKAIQ_LABS narrows the matrix (an instructor working on one lab).
  const matrixLabs = process.env.KAFKAIQ_LABS ? process.env.KAFKAIQ_LABS.split(',').map((id) => id.trim()).filter(Boolean) : listLabIds();
  const externalBrokers = process.env.KAFKA_BROKERS?.trim() ?? '';
  const firstBrokerPort = defaultBrokerPort();
  const pools = new Map<number, ClusterPool>();
  const poolForLane = (lane: number) => {
    let pool = pools.get(lane);
    if (!pool) {
      const brokerPort = firstBrokerPort + LANE_PORT_STRIDE * (lane - 1);
      pool = new ClusterPool({ log: (line) => log(`lane ${lane}: ${line}`), poolUrl: '', external: externalBrokers, brokerPort });
      pools.set(lane, pool);
    }
    return pool;
  };
  // The course site is built now, beside lane 1's broker start, and never again in the run: test
  // files edit the sources on purpose (a lesson page in dev-loop, a scaffolded lab), and a build
  // that read them half-edited, or rebuilt dist/ under a server of another lane, would break
  // files that have nothing to do with the edit. The test servers start with --no-build.
  const site = buildSiteIfStale(false);
  if (!externalBrokers) await writeClassArchive(firstBrokerPort + LANE_PORT_STRIDE * testLanes(), log);
  const [first] = await Promise.all([poolForLane(1).get('single'), site]);
  console.log(`[broker] lane 1: ${first.origin} ${first.brokers.join(',')}`);
  const served = await serveClusterPool(poolForLane);
  const matrixQueue = await serveMatrixQueue();
  project.provide('clusterPool', served.url);
  project.provide('firstBrokerPort', firstBrokerPort);
  project.provide('externalBrokers', externalBrokers);
  project.provide('matrixLabs', matrixLabs);
  project.provide('matrixQueue', matrixQueue.url);
  return async () => {
    await served.close();
    await matrixQueue.close();
    await Promise.all([...pools.values()].map((pool) => pool.close()));
  };
}
