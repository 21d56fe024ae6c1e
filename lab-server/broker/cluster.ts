import { randomBytes, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { BrokerProcess, type BrokerOptions } from './broker-process.ts';
import { isKafkaAt } from './probes.ts';
import type { BrokerHealth } from './health.ts';
import { maintenanceFor } from './maintenance.ts';

/**
 * What the grader may do to the brokers. Only available when a KafkaIQ process started them
 * (here or in another terminal); a cluster named by KAFKA_BROKERS is never touched.
 */
export interface BrokerControl {
  nodeIds(): Promise<number[]>;
  /** Clean stop and start of every node, waiting until the cluster is usable again. */
  restart(): Promise<void>;
  killNode(nodeId: number): Promise<void>;
  startNode(nodeId: number): Promise<void>;
}

export interface KafkaCluster {
  brokers: string[];
  /** How we got it, for the start-up message. */
  origin: 'external' | 'reused' | 'started';
  control: BrokerControl | null;
  /** Set when this process owns (and supervises) the broker. */
  health?: BrokerHealth;
  close(): Promise<void>;
}

export function localControl(broker: BrokerProcess): BrokerControl {
  return {
    nodeIds: async () => broker.nodes.map((n) => n.nodeId),
    restart: () => broker.restart(),
    killNode: (id) => broker.stopNode(id, 'SIGKILL'),
    startNode: (id) => broker.startNode(id),
  };
}

function controlFile(broker: BrokerProcess): string {
  return path.join(broker.dataDir, 'control.json');
}

/** True when the request carries the control token (constant-time comparison). */
function authorized(req: http.IncomingMessage, token: string): boolean {
  const given = Buffer.from(/^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '', 'utf8');
  const expected = Buffer.from(token, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * Lets other KafkaIQ processes (the lab server, the test workers) inject broker faults into a
 * broker this process owns: a loopback-only HTTP endpoint whose port and token are written next
 * to the data, in a 0600 file. Loopback alone is not enough: a learner program runs on the same
 * machine, so every request must carry the token, which only processes of this user can read
 * (and a learner program cannot: its file reads are limited to its own bundle).
 */
export async function serveControl(broker: BrokerProcess): Promise<() => Promise<void>> {
  const control = localControl(broker);
  // A restart asked for by another process (a `kafkaiq check` in a second terminal, say) waits,
  // like this process's own, until this process's grades have left their seeding and verifying
  // sections, and counts as downtime for their time limits. (The other way round, this process's
  // restarts are not known to grades in other processes: see README, "two processes, one broker".)
  const maintenance = maintenanceFor(broker.brokers);
  const token = randomBytes(32).toString('base64url');
  const server = http.createServer((req, res) => {
    if (!authorized(req, token)) {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('the broker control endpoint needs its token (control.json)');
      return;
    }
    const match = /^\/(restart|nodes\/(\d+)\/(kill|start))$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !match) {
      res.writeHead(404).end();
      return;
    }
    const action =
      match[1] === 'restart'
        ? maintenance.withExclusive(() => control.restart())
        : match[3] === 'kill'
          ? control.killNode(Number(match[2]))
          : control.startNode(Number(match[2]));
    action.then(
      () => res.writeHead(204).end(),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err instanceof Error ? err.message : err)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  fs.rmSync(controlFile(broker), { force: true });
  fs.writeFileSync(controlFile(broker), JSON.stringify({ port, token, pid: process.pid, brokers: broker.brokers, nodeIds: broker.nodes.map((n) => n.nodeId) }), { mode: 0o600 });
  return async () => {
    fs.rmSync(controlFile(broker), { force: true });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
}

function remoteControl(file: string): BrokerControl | null {
  let info: { port: number; token: string; pid: number; nodeIds: number[] };
  try {
    info = JSON.parse(fs.readFileSync(file, 'utf8'));
    process.kill(info.pid, 0);
  } catch {
    return null;
  }
  const post = async (route: string) => {
    const res = await fetch(`http://127.0.0.1:${info.port}${route}`, { method: 'POST', headers: { authorization: `Bearer ${info.token}` } });
    if (!res.ok) throw new KafkaIqError('BROKER_UNREACHABLE', `Broker control failed: ${await res.text()}`);
  };
  return {
    nodeIds: async () => info.nodeIds,
    restart: () => post('/restart'),
    killNode: (id) => post(`/nodes/${id}/kill`),
    startNode: (id) => post(`/nodes/${id}/start`),
  };
}

/**
 * The one way every entry point gets a Kafka: KAFKA_BROKERS if set; otherwise a KafkaIQ broker
 * already running on the default port; otherwise a new one owned by this process.
 */
export async function connectCluster(
  options: BrokerOptions & {
    startIfMissing?: boolean;
    /** The bootstrap list to use instead of KAFKA_BROKERS ('' for none); see ClusterPool. */
    external?: string;
  } = {},
): Promise<KafkaCluster> {
  const external = (options.external ?? process.env.KAFKA_BROKERS)?.trim();
  if (external) {
    const brokers = external.split(',').map((b) => b.trim()).filter(Boolean);
    if (!(await isKafkaAt(brokers[0]!))) {
      // A Kafka that answers without SASL is one KafkaIQ cannot wall tenants off on.
      const plaintext = await isKafkaAt(brokers[0]!, 3_000, { plaintext: true });
      throw new KafkaIqError(
        'BROKER_UNREACHABLE',
        plaintext
          ? `The Kafka at KAFKA_BROKERS=${external} has a plaintext listener without authentication: KafkaIQ needs SASL/PLAIN with per-attempt users (README, Tenancy), or unset KAFKA_BROKERS to let KafkaIQ start its own broker.`
          : `No Kafka answers at KAFKA_BROKERS=${external} (or it refused KafkaIQ's login): start that cluster, check KAFKAIQ_KAFKA_SECRET_FILE, or unset KAFKA_BROKERS to let KafkaIQ start its own broker.`,
      );
    }
    const shared = new BrokerProcess(options);
    const control = brokers.join(',') === shared.brokers.join(',') ? remoteControl(controlFile(shared)) : null;
    return { brokers, origin: 'external', control, close: async () => {} };
  }
  const broker = new BrokerProcess(options);
  // Another KafkaIQ process owns this broker; it may be restarting it right now (a grader's
  // broker-restart fault), so wait for it rather than start a second one on the same data.
  const deadline = Date.now() + (BrokerProcess.liveOwner(broker.dataDir) ? 90_000 : 0);
  do {
    if (await isKafkaAt(broker.brokers[0]!)) {
      // The owner writes its control file just after the broker answers: give it a moment, or
      // this process could not inject broker faults for its whole life.
      let control = remoteControl(controlFile(broker));
      for (let i = 0; !control && i < 20 && BrokerProcess.liveOwner(broker.dataDir); i++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        control = remoteControl(controlFile(broker));
      }
      return { brokers: broker.brokers, origin: 'reused', control, close: async () => {} };
    }
    if (Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 500));
  } while (Date.now() < deadline);
  if (options.startIfMissing === false) {
    throw new KafkaIqError('BROKER_UNREACHABLE', `No Kafka at ${broker.brokers[0]}: run 'npm run broker${broker.nodes.length > 1 ? ' -- --cluster' : ''}' or set KAFKA_BROKERS.`);
  }
  await broker.start();
  const stopServing = await serveControl(broker);
  return {
    brokers: broker.brokers,
    origin: 'started',
    control: localControl(broker),
    health: {
      state: () => broker.health,
      detail: () => broker.healthDetail,
      subscribe: (listener) => broker.onHealth(listener),
      close: () => {},
    },
    close: async () => {
      await stopServing();
      await broker.stop();
    },
  };
}
