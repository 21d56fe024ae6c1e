/**
 * The Kafka clusters a process may need, by the kind a lab declares (`cluster` in lab.ts):
 *  - 'single': the teaching broker (KAFKA_BROKERS, or KafkaIQ's own on KAFKAIQ_BROKER_PORT, 9092);
 *  - 'three-nodes': a 3-broker cluster for the failover labs (KAFKA_BROKERS if it has at least 3
 *    brokers, else KafkaIQ's own on the next three ports, 9095-9097 by default).
 * Each is connected (reused, or started and owned by this process) on first use only, so a
 * process that never grades a three-nodes lab never pays for three JVMs.
 *
 * Test runs start clusters once for the whole run: vitest's global setup owns one pool per lane
 * (a test worker and the files it runs, one after another) and serves them on a loopback HTTP
 * endpoint (KAFKAIQ_CLUSTER_POOL); the pools of a lane's worker (and of a course server it spawns)
 * ask it, so the first file of a lane that needs the 3-node cluster starts it in the long-lived
 * process and every later file of that lane reuses it.
 */
import http from 'node:http';
import { KafkaIqError, describeError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import { createKafka, withAdmin } from '../kafka/client.ts';
import type { BrokerOptions } from './broker-process.ts';
import { defaultClusterBasePort } from './ports.ts';
import { connectCluster, type KafkaCluster } from './cluster.ts';

export type ClusterKind = 'single' | 'three-nodes';

export const CLUSTER_KINDS: readonly ClusterKind[] = ['single', 'three-nodes'];

/** What a grade needs of a cluster. */
export type ClusterHandle = Pick<KafkaCluster, 'brokers' | 'control'>;

/** Where graders get a cluster for a lab: a ClusterPool, or one fixed cluster (see fixedClusters). */
export interface ClusterSource {
  get(kind: ClusterKind): Promise<ClusterHandle>;
  /** False while get(kind) would still have to connect or start the cluster. */
  isReady?(kind: ClusterKind): boolean;
  /**
   * The caller is done with `kind`: a cluster the pool started for it stops now (a later get
   * starts it again). Three idle JVMs of a 3-node cluster cost a tenth of a core between them.
   */
  release?(kind: ClusterKind): Promise<void>;
}

/** The env variable through which a pool served by serveClusterPool reaches child processes. */
export const CLUSTER_POOL_ENV = 'KAFKAIQ_CLUSTER_POOL';

const NODES: Record<ClusterKind, 1 | 3> = { single: 1, 'three-nodes': 3 };

export interface ClusterPoolOptions {
  log?: (line: string) => void;
  /** KAFKA_BROKERS as the user gave it; defaults to the environment when the pool is made. */
  external?: string;
  /** A served pool to ask instead of connecting ourselves; defaults to KAFKAIQ_CLUSTER_POOL. */
  poolUrl?: string;
  /** The port of KafkaIQ's own single broker (the 3-node cluster takes the three above it); defaults to defaultBrokerPort(). */
  brokerPort?: number;
}

export class ClusterPool implements ClusterSource {
  private readonly clusters = new Map<ClusterKind, Promise<KafkaCluster>>();
  private readonly ready = new Set<ClusterKind>();
  private readonly external: string | undefined;
  private readonly poolUrl: string | undefined;
  private readonly log: (line: string) => void;
  private readonly brokerPort: number | undefined;

  constructor(options: ClusterPoolOptions = {}) {
    this.external = ('external' in options ? options.external : process.env.KAFKA_BROKERS)?.trim() || undefined;
    this.poolUrl = ('poolUrl' in options ? options.poolUrl : process.env[CLUSTER_POOL_ENV])?.trim() || undefined;
    this.log = options.log ?? (() => {});
    this.brokerPort = options.brokerPort;
  }

  /** True once get(kind) has succeeded: a later get answers at once. */
  isReady(kind: ClusterKind): boolean {
    return this.ready.has(kind);
  }

  get(kind: ClusterKind): Promise<KafkaCluster> {
    let cluster = this.clusters.get(kind);
    if (!cluster) {
      cluster = this.connect(kind).then((c) => {
        this.ready.add(kind);
        return c;
      });
      // A failed start is not remembered: the next grade tries again (the user may have fixed it).
      cluster.catch(() => this.clusters.delete(kind));
      this.clusters.set(kind, cluster);
    }
    return cluster;
  }

  /**
   * Stops the cluster of `kind` if this pool started it (or asks the served pool to); a reused or
   * external one is only forgotten. Callers release the 3-node cluster once their failover grades
   * are done, so its three JVMs do not idle beside the grades that follow.
   */
  async release(kind: ClusterKind): Promise<void> {
    const cluster = this.clusters.get(kind);
    this.clusters.delete(kind);
    this.ready.delete(kind);
    if (this.poolUrl) {
      if (cluster) await releaseServed(this.poolUrl, kind);
      return;
    }
    const settled = await cluster?.catch(() => null);
    if (settled) await bestEffort(`stop the cluster at ${settled.brokers.join(',')}`, () => settled.close(), this.log);
  }

  /** Stops the clusters this pool started; reused and external ones are left alone. */
  async close(): Promise<void> {
    const clusters = await Promise.allSettled(this.clusters.values());
    this.clusters.clear();
    this.ready.clear();
    await Promise.all(clusters.map((c) => (c.status === 'fulfilled' ? bestEffort(`stop the cluster at ${c.value.brokers.join(',')}`, () => c.value.close(), this.log) : undefined)));
  }

  private options(kind: ClusterKind): BrokerOptions {
    if (kind === 'single') return this.brokerPort === undefined ? { log: this.log } : { basePort: this.brokerPort, log: this.log };
    return { nodes: 3, basePort: this.brokerPort === undefined ? defaultClusterBasePort() : this.brokerPort + 3, log: this.log };
  }

  private async connect(kind: ClusterKind): Promise<KafkaCluster> {
    if (this.poolUrl) {
      // Our owner (the test run's global setup) connects or starts it; we only attach.
      const brokers = await askServedPool(this.poolUrl, kind);
      return connectCluster({ ...this.options(kind), external: brokers.join(',') });
    }
    if (kind === 'single' || !this.external) return connectCluster({ ...this.options(kind), external: this.external ?? '' });
    // KAFKA_BROKERS names the user's cluster: never start one beside it, but a 3-node lab needs 3 brokers.
    const count = await brokerCount(this.external);
    if (count !== null && count < 3) {
      throw new KafkaIqError(
        'BROKER_UNREACHABLE',
        `This lab needs a cluster of 3 brokers, but KAFKA_BROKERS=${this.external} has ${count}: point KAFKA_BROKERS at a 3-broker cluster, or unset it and KafkaIQ starts its own (127.0.0.1:${defaultClusterBasePort()}-${defaultClusterBasePort() + 2}).`,
      );
    }
    return connectCluster({ ...this.options(kind), external: this.external });
  }
}

/** A source that always answers with one cluster (benchmarks, callers that connected themselves). */
export function fixedClusters(cluster: ClusterHandle): ClusterSource {
  return {
    async get(kind) {
      if (kind === 'three-nodes' && cluster.brokers.length < 3) {
        const count = await brokerCount(cluster.brokers.join(','));
        if (count === null || count < 3) {
          throw new KafkaIqError('INVALID_INPUT', `This lab needs a cluster of 3 brokers, but ${cluster.brokers.join(',')} has ${count ?? 'fewer'}: grade it through a ClusterPool (kafkaiq grade/check do) or point KAFKA_BROKERS at a 3-broker cluster.`);
        }
      }
      return cluster;
    },
  };
}

/** Accepts either a source or a plain cluster, for callers of gradeProgram/checkLabs. */
export function asClusterSource(clusters: ClusterSource | ClusterHandle): ClusterSource {
  return 'get' in clusters && typeof clusters.get === 'function' ? clusters : fixedClusters(clusters as ClusterHandle);
}

async function brokerCount(bootstrap: string): Promise<number | null> {
  const kafka = createKafka(bootstrap.split(',').map((b) => b.trim()).filter(Boolean), 'kafkaiq-probe', { retry: { retries: 1 } });
  try {
    return await withAdmin(kafka, async (admin) => (await admin.describeCluster()).brokers.length);
  } catch {
    return null; // connectCluster says clearly that nothing answers
  }
}

export async function askServedPool(url: string, kind: ClusterKind): Promise<string[]> {
  let res: Response;
  try {
    res = await fetch(`${url}/clusters/${kind}`, { method: 'POST' });
  } catch (err) {
    throw new KafkaIqError('BROKER_UNREACHABLE', `The cluster pool at ${CLUSTER_POOL_ENV}=${url} does not answer (${describeError(err)}): unset ${CLUSTER_POOL_ENV}.`);
  }
  const body = await res.text();
  if (!res.ok) throw new KafkaIqError('BROKER_UNREACHABLE', body || `The cluster pool at ${url} failed (HTTP ${res.status}).`);
  return (JSON.parse(body) as { brokers: string[] }).brokers;
}

/** Tells a served pool that this lane is done with `kind` (see ClusterPool.release). */
async function releaseServed(url: string, kind: ClusterKind): Promise<void> {
  const res = await fetch(`${url}/clusters/${kind}/release`, { method: 'POST' });
  if (!res.ok) throw new KafkaIqError('BROKER_UNREACHABLE', (await res.text()) || `The cluster pool at ${url} failed to release ${kind} (HTTP ${res.status}).`);
}

/**
 * Serves pools to other processes on 127.0.0.1, one per lane: POST /lanes/<n>/clusters/<kind> ->
 * {"brokers": [...]}, starting a lane's pool and its clusters on their first request, and POST
 * /lanes/<n>/clusters/<kind>/release, stopping that cluster once the lane is done with it. Lanes let
 * test files run side by side, each on brokers of its own (a file restarts its broker on purpose).
 * Returns the URL whose `/lanes/<n>` is what a lane's processes put in KAFKAIQ_CLUSTER_POOL.
 */
export async function serveClusterPool(poolForLane: (lane: number) => ClusterPool): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const match = /^\/lanes\/([1-9][0-9]?)\/clusters\/([a-z-]+)(\/release)?$/.exec(req.url ?? '');
    const kind = match?.[2] as ClusterKind | undefined;
    if (req.method !== 'POST' || !match || !kind || !CLUSTER_KINDS.includes(kind)) {
      res.writeHead(404).end();
      return;
    }
    const pool = poolForLane(Number(match[1]));
    if (match[3]) {
      pool.release(kind).then(
        () => res.writeHead(204).end(),
        (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(describeError(err)),
      );
      return;
    }
    pool.get(kind).then(
      (cluster) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ brokers: cluster.brokers })),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(describeError(err)),
    );
  });
  // A cluster start takes tens of seconds: no request timeout on our side.
  server.requestTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
