import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { STATE_DIR, displayPath } from '../core/paths.ts';
import { retry } from '../core/retry.ts';
import { createKafka } from '../kafka/client.ts';
import { ensureBrokerJars } from './jars.ts';
import { findJava } from './java.ts';
import { brokerJvmArgs, classpath } from './jvm-flags.ts';
import { CONTROLLER_PORT_OFFSET, defaultBrokerPort } from './ports.ts';
import { isKafkaAt, portAnswers } from './probes.ts';
import { BROKER_USER, GRADER_USER, kafkaSecret, passwordFor, secretFile } from '../kafka/credentials.ts';
import { serverProperties, type BrokerNode, type BrokerSecurity } from './server-properties.ts';

export interface BrokerOptions {
  /** 1 for the teaching broker, 3 for the failover labs. */
  nodes?: 1 | 3;
  /** Port of the first broker; the others follow (9092, 9093, 9094). Controllers sit 10000 above. */
  basePort?: number;
  /** Folder for data and logs; defaults to .kafkaiq/broker-<nodes>n-<port>. */
  dataDir?: string;
  heapMb?: number;
  log?: (line: string) => void;
  /** How long a start may take before we give up and show the log. */
  readyTimeoutMs?: number;
}

/** up: serving; restarting: a node died and is being started again; down: it could not be. */
export type BrokerHealthState = 'up' | 'restarting' | 'down';

/**
 * A real Apache Kafka (KRaft, broker+controller per node) run from the jars in broker/lib.
 * Every JVM is started through ParentWatchLauncher with a pipe on stdin, so it shuts down when
 * this process dies, however it dies.
 */
export class BrokerProcess {
  readonly nodes: BrokerNode[];
  readonly dataDir: string;
  private readonly children = new Map<number, ChildProcess>();
  private readonly heapMb: number;
  private readonly log: (line: string) => void;
  private readonly readyTimeoutMs: number;

  constructor(options: BrokerOptions = {}) {
    const count = options.nodes ?? 1;
    const basePort = options.basePort ?? defaultBrokerPort();
    this.nodes = Array.from({ length: count }, (_, i) => ({
      nodeId: i + 1,
      port: basePort + i,
      controllerPort: basePort + i + CONTROLLER_PORT_OFFSET,
    }));
    this.dataDir = options.dataDir ?? path.join(STATE_DIR, `broker-${count}n-${basePort}`);
    this.heapMb = options.heapMb ?? (count === 1 ? 512 : 384);
    this.log = options.log ?? (() => {});
    this.readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
  }

  get brokers(): string[] {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`);
  }

  logPath(nodeId: number): string {
    return path.join(this.dataDir, `node-${nodeId}.log`);
  }

  isRunning(nodeId?: number): boolean {
    const ids = nodeId ? [nodeId] : this.nodes.map((n) => n.nodeId);
    return ids.every((id) => {
      const child = this.children.get(id);
      return !!child && child.exitCode === null && child.signalCode === null;
    });
  }

  /** Fetches jars if needed, formats on first start, starts every node and waits until usable. */
  async start(): Promise<void> {
    await ensureBrokerJars(this.log);
    const java = findJava();
    this.claimDataDir();
    for (const node of this.nodes) await this.assertPortsFree(node);
    this.formatIfNeeded(java.command);
    for (const node of this.nodes) this.spawnNode(node, java.command);
    await this.waitUntilReady();
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.stopNode(n.nodeId)));
  }

  // ---- supervision: a node that dies on its own (kill -9, an OOM) is started again ------------

  /** Nodes stopped on purpose (stop, a fault's kill): not restarted until startNode. */
  private readonly stoppedOnPurpose = new Set<number>();
  private healthState: BrokerHealthState = 'up';
  private readonly healthListeners = new Set<(state: BrokerHealthState, detail: string) => void>();

  /** The JVM's pid of a node (for the supervision test's kill -9). */
  nodePid(nodeId: number): number | undefined {
    return this.children.get(nodeId)?.pid;
  }

  get health(): BrokerHealthState {
    return this.healthState;
  }

  /** Tells the listener each change of the broker's health (for the workbench's badge). */
  onHealth(listener: (state: BrokerHealthState, detail: string) => void): () => void {
    this.healthListeners.add(listener);
    return () => this.healthListeners.delete(listener);
  }

  private setHealth(state: BrokerHealthState, detail: string): void {
    this.healthState = state;
    for (const listener of this.healthListeners) listener(state, detail);
  }

  private onNodeExit(node: BrokerNode, child: ChildProcess): void {
    if (this.stoppedOnPurpose.has(node.nodeId) || this.children.get(node.nodeId) !== child || this.restarting) return;
    const how = child.signalCode ?? `code ${child.exitCode}`;
    this.log(`Kafka node ${node.nodeId} exited on its own (${how}): restarting it.`);
    this.setHealth('restarting', `node ${node.nodeId} exited (${how}); restarting`);
    void retry(
      async (attempt) => {
        if (this.stoppedOnPurpose.has(node.nodeId)) return;
        if (attempt > 0) this.log(`Kafka node ${node.nodeId}: restart try ${attempt + 1}`);
        await this.startNode(node.nodeId);
      },
      { retries: 8, minDelayMs: 1_000, maxDelayMs: 30_000, shouldRetry: () => !this.stoppedOnPurpose.has(node.nodeId) },
    ).then(
      () => {
        if (this.isRunning()) {
          this.log(`Kafka node ${node.nodeId} is back.`);
          this.setHealth('up', 'restarted');
        }
      },
      (err: unknown) => {
        this.log(`Kafka node ${node.nodeId} could not be restarted: ${(err as Error).message}`);
        this.setHealth('down', `node ${node.nodeId} could not be restarted: restart the server`);
      },
    );
  }

  private restarting: Promise<void> | null = null;

  /** The grader's "broker bounce": a clean stop and start with the same data. Concurrent calls share one bounce. */
  restart(): Promise<void> {
    this.restarting ??= (async () => {
      try {
        await this.stop();
        const java = findJava();
        for (const node of this.nodes) this.spawnNode(node, java.command);
        await this.waitUntilReady();
      } finally {
        this.restarting = null;
      }
    })();
    return this.restarting;
  }

  async stopNode(nodeId: number, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 20_000): Promise<void> {
    this.stoppedOnPurpose.add(nodeId);
    const child = this.children.get(nodeId);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
  }

  /** Starts one node again (after stopNode/kill) and waits until the cluster sees all nodes. */
  async startNode(nodeId: number): Promise<void> {
    const node = this.nodes.find((n) => n.nodeId === nodeId);
    if (!node) throw new KafkaIqError('INVALID_INPUT', `No broker node ${nodeId}: nodes are ${this.nodes.map((n) => n.nodeId).join(', ')}.`);
    if (this.isRunning(nodeId)) return;
    await this.assertPortsFree(node);
    this.spawnNode(node, findJava().command);
    // Right after a kill the controller may still count the dead node (it is fenced only when its
    // session times out), so "the cluster has every node" alone would pass at once: wait until
    // this node answers on its own port too.
    const deadline = Date.now() + this.readyTimeoutMs;
    while (!(await isKafkaAt(`127.0.0.1:${node.port}`, 1_000))) {
      this.assertAlive(nodeId);
      if (Date.now() > deadline) {
        throw new KafkaIqError('BROKER_START_FAILED', `Kafka node ${nodeId} did not answer within ${Math.round(this.readyTimeoutMs / 1000)} s of its restart: see ${displayPath(this.logPath(nodeId))}.`);
      }
      await sleep(200);
    }
    await this.waitUntilReady();
  }

  /** The process that owns this data dir, if it is still alive (another terminal, a test run). */
  static liveOwner(dataDir: string): number | null {
    try {
      const pid = Number(fs.readFileSync(path.join(dataDir, 'owner.pid'), 'utf8'));
      if (!pid || pid === process.pid) return null;
      process.kill(pid, 0);
      return pid;
    } catch {
      return null;
    }
  }

  /** Two JVMs on one log dir would corrupt it: one KafkaIQ process owns a data dir at a time. */
  private claimDataDir(): void {
    const owner = BrokerProcess.liveOwner(this.dataDir);
    if (owner) {
      throw new KafkaIqError(
        'PORT_TAKEN',
        `The KafkaIQ broker in ${displayPath(this.dataDir)} belongs to process ${owner} (is 'npm run broker' or 'npm start' running?): use that one, or stop it first.`,
      );
    }
    fs.mkdirSync(this.dataDir, { recursive: true });
    fs.writeFileSync(path.join(this.dataDir, 'owner.pid'), String(process.pid));
    process.once('exit', () => {
      if (BrokerProcess.liveOwner(this.dataDir) === null) fs.rmSync(path.join(this.dataDir, 'owner.pid'), { force: true });
    });
  }

  private async assertPortsFree(node: BrokerNode): Promise<void> {
    for (const port of [node.port, node.controllerPort]) {
      if (!(await portAnswers(port))) continue;
      const kafka = port === node.port && ((await isKafkaAt(`127.0.0.1:${port}`)) || (await isKafkaAt(`127.0.0.1:${port}`, 3_000, { plaintext: true })));
      throw new KafkaIqError(
        'PORT_TAKEN',
        kafka
          ? `A Kafka broker is already running on 127.0.0.1:${port}: stop it, or use it with KAFKA_BROKERS=127.0.0.1:${port}.`
          : `Port ${port} on 127.0.0.1 is taken by another program (not Kafka): stop it ('lsof -i :${port}' shows which) or set KAFKA_BROKERS to an existing cluster.`,
      );
    }
  }

  private nodeDir(nodeId: number): string {
    return path.join(this.dataDir, `node-${nodeId}`);
  }

  private configPath(nodeId: number): string {
    return path.join(this.dataDir, `node-${nodeId}.properties`);
  }

  private formatIfNeeded(javaCommand: string): void {
    fs.mkdirSync(this.dataDir, { recursive: true });
    const clusterIdFile = path.join(this.dataDir, 'cluster-id');
    if (!fs.existsSync(clusterIdFile)) fs.writeFileSync(clusterIdFile, randomBytes(16).toString('base64url'));
    const clusterId = fs.readFileSync(clusterIdFile, 'utf8').trim();
    kafkaSecret(); // creates the secret on a first start
    const security: BrokerSecurity = { secretFile: path.resolve(secretFile()), brokerUser: BROKER_USER, brokerPassword: passwordFor(BROKER_USER), superUsers: [BROKER_USER, GRADER_USER] };
    for (const node of this.nodes) {
      // 0600: the file holds the brokers' own password.
      fs.rmSync(this.configPath(node.nodeId), { force: true });
      fs.writeFileSync(this.configPath(node.nodeId), serverProperties(this.nodes, (id) => this.nodeDir(id), node, security), { mode: 0o600 });
      if (fs.existsSync(path.join(this.nodeDir(node.nodeId), 'meta.properties'))) continue;
      const result = spawnSync(
        javaCommand,
        ['-cp', classpath(), 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', this.configPath(node.nodeId)],
        { encoding: 'utf8' },
      );
      if (result.status !== 0) {
        fs.writeFileSync(this.logPath(node.nodeId), `${result.stdout}\n${result.stderr}`);
        throw new KafkaIqError(
          'BROKER_START_FAILED',
          `Formatting the Kafka log directory failed: see ${displayPath(this.logPath(node.nodeId))} (delete ${displayPath(this.dataDir)} to start afresh).`,
        );
      }
    }
  }

  private spawnNode(node: BrokerNode, javaCommand: string): void {
    const logFile = this.logPath(node.nodeId);
    const out = fs.openSync(logFile, 'a');
    fs.writeSync(out, `\n===== ${new Date().toISOString()} starting node ${node.nodeId} =====\n`);
    const child = spawn(
      javaCommand,
      brokerJvmArgs({ nodeId: node.nodeId, heapMb: this.heapMb, configPath: this.configPath(node.nodeId) }),
      // stdin stays an open pipe that we never write: its EOF is the JVM's signal that we died.
      { stdio: ['pipe', out, out] },
    );
    fs.closeSync(out);
    child.on('error', () => {});
    this.stoppedOnPurpose.delete(node.nodeId);
    this.children.set(node.nodeId, child);
    child.once('exit', () => this.onNodeExit(node, child));
  }

  private async waitUntilReady(): Promise<void> {
    const deadline = Date.now() + this.readyTimeoutMs;
    const kafka = createKafka(this.brokers, 'kafkaiq-ready', { connectionTimeout: 1_000, retry: { retries: 0 } });
    const admin = kafka.admin();
    try {
      for (;;) {
        for (const node of this.nodes) this.assertAlive(node.nodeId);
        if (Date.now() > deadline) {
          throw new KafkaIqError(
            'BROKER_START_FAILED',
            `Kafka did not become ready within ${Math.round(this.readyTimeoutMs / 1000)} s: see ${displayPath(this.logPath(1))}.`,
          );
        }
        try {
          await admin.connect();
          const cluster = await admin.describeCluster();
          if (cluster.brokers.length === this.nodes.length && cluster.controller !== null) break;
        } catch {
          // not up yet
        }
        await sleep(250);
      }
      await this.warmUpCoordinators();
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  /**
   * A fresh broker answers metadata before its group and transaction coordinators have loaded.
   * Touch both now so a learner's first initTransactions/sendOffsets does not meet
   * COORDINATOR_LOAD_IN_PROGRESS (kafkajs does not retry TxnOffsetCommit on it).
   */
  private async warmUpCoordinators(): Promise<void> {
    const kafka = createKafka(this.brokers, 'kafkaiq-warmup');
    const admin = kafka.admin();
    const producer = kafka.producer({ transactionalId: 'kafkaiq-warmup', idempotent: true, maxInFlightRequests: 1 });
    try {
      await retry(
        async () => {
          await admin.connect();
          await admin.fetchOffsets({ groupId: 'kafkaiq-warmup', topics: [] });
          await producer.connect();
          const txn = await producer.transaction();
          await txn.sendOffsets({ consumerGroupId: 'kafkaiq-warmup', topics: [] });
          await txn.abort();
        },
        { retries: 40, minDelayMs: 250, maxDelayMs: 1_000 },
      );
    } finally {
      await producer.disconnect().catch(() => {});
      await admin.disconnect().catch(() => {});
    }
  }

  private assertAlive(nodeId: number): void {
    const child = this.children.get(nodeId);
    if (!child || (child.exitCode === null && child.signalCode === null)) return;
    const logFile = this.logPath(nodeId);
    const tail = readTail(logFile);
    const portInUse = /Address already in use/.test(tail);
    throw new KafkaIqError(
      portInUse ? 'PORT_TAKEN' : 'BROKER_START_FAILED',
      portInUse
        ? `Kafka node ${nodeId} could not bind its port (already in use): stop the other program or set KAFKA_BROKERS. Log: ${displayPath(logFile)}`
        : `Kafka node ${nodeId} exited during start (code ${child.exitCode ?? child.signalCode}): see ${displayPath(logFile)}${lastErrorLine(tail)}`,
    );
  }
}

function readTail(file: string, bytes = 8_192): string {
  try {
    const fd = fs.openSync(file, 'r');
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.min(bytes, size));
    fs.readSync(fd, buf, 0, buf.length, size - buf.length);
    fs.closeSync(fd);
    return buf.toString('utf8');
  } catch {
    return '';
  }
}

function lastErrorLine(text: string): string {
  const line = text.split('\n').reverse().find((l) => /ERROR|Exception/.test(l));
  return line ? ` (${line.trim().slice(0, 200)})` : '';
}
