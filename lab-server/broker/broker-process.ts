import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { STATE_DIR, displayPath } from '../core/paths.ts';
import { retry } from '../core/retry.ts';
import { ensureBrokerJars } from './jars.ts';
import { findJava } from './java.ts';
import { formatIfNeeded } from './format.ts';
import type { BrokerHealthState } from './health.ts';
import { brokerJvmArgs } from './jvm-flags.ts';
import { CONTROLLER_PORT_OFFSET, defaultBrokerPort } from './ports.ts';
import { assertPortsFree, claimDataDir, liveOwner } from './data-dir.ts';
import { isKafkaAt } from './probes.ts';
import { lastErrorLine, readTail, waitUntilReady } from './readiness.ts';
import { restartInJvm, RESTARTS_PER_JVM } from './restart-in-jvm.ts';
import { CRASH_LOOP, CrashLoop, quarantine, Watchdog, WATCHDOG, type WatchdogOptions } from './recovery.ts';
import type { BrokerNode } from './server-properties.ts';

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
  /** The health check of a running broker (recovery.ts); false for none. */
  watchdog?: WatchdogOptions | false;
  /** Restarts a node's JVM does in place before the next is a new JVM (RESTARTS_PER_JVM). */
  restartsPerJvm?: number;
}

/**
 * A real Apache Kafka (KRaft, broker+controller per node) run from the jars in broker/lib.
 * Every JVM is started through RestartableBroker with a pipe on stdin, so it shuts down when
 * this process dies, however it dies.
 */
export class BrokerProcess {
  readonly nodes: BrokerNode[];
  readonly dataDir: string;
  private readonly children = new Map<number, ChildProcess>();
  private readonly heapMb: number;
  private readonly log: (line: string) => void;
  private readonly readyTimeoutMs: number;
  private readonly restartsPerJvm: number;

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
    this.restartsPerJvm = options.restartsPerJvm ?? RESTARTS_PER_JVM;
    this.watchdog = options.watchdog === false ? null : new Watchdog(this.watchdogTarget(), options.watchdog ?? WATCHDOG);
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

  /**
   * Fetches jars if needed, formats on first start, starts every node and waits until usable. A
   * start that fails because of the broker's own state counts towards the crash-loop rule
   * (recovery.ts): after CRASH_LOOP.failedStarts in a row the state is quarantined and the broker
   * starts afresh, once; a second fresh start that fails is reported.
   */
  async start(): Promise<void> {
    await ensureBrokerJars(this.log);
    const java = findJava();
    claimDataDir(this.dataDir);
    for (const node of this.nodes) await assertPortsFree(node);
    let fresh = false;
    this.crashLoop.reset();
    for (;;) {
      this.formatIfNeeded(java.command);
      try {
        for (const node of this.nodes) this.spawnNode(node, java.command);
        await this.waitUntilReady();
        break;
      } catch (err) {
        if (!(err instanceof KafkaIqError && err.code === 'BROKER_START_FAILED')) throw err;
        for (const node of this.nodes) await this.terminate(node.nodeId);
        this.crashLoop.startFailed();
        if (!this.crashLoop.poisoned) {
          this.log(`Kafka did not start (${err.message}); trying again (${this.crashLoop.failedStarts} of ${CRASH_LOOP.failedStarts} failed).`);
          await sleep(1_000);
          continue;
        }
        if (fresh) throw err;
        fresh = true;
        this.quarantineState();
      }
    }
    this.crashLoop.ready();
    this.supervising = true;
    this.watchdog?.arm();
  }

  async stop(): Promise<void> {
    this.supervising = false;
    this.watchdog?.disarm();
    await Promise.all(this.nodes.map((n) => this.stopNode(n.nodeId)));
  }

  // ---- supervision: a node that dies on its own (kill -9, an OOM) is started again ------------

  /** Nodes stopped on purpose (stop, a fault's kill): not restarted until startNode. */
  private readonly stoppedOnPurpose = new Set<number>();
  private healthState: BrokerHealthState = 'up';
  private healthDetailText = '';
  private readonly healthListeners = new Set<(state: BrokerHealthState, detail: string) => void>();
  /** Set once start() succeeds, cleared by stop(): only then is an exit the supervisor's business. */
  private supervising = false;
  private readonly crashLoop = new CrashLoop();
  private readonly watchdog: Watchdog | null;
  /** The supervisor bringing nodes back; exits while it runs are its own starts failing. */
  private recovery: Promise<void> | null = null;
  /** Nodes between spawn and ready in startNode: not yet the watchdog's to judge. */
  private readonly startingNodes = new Set<number>();

  /** The JVM's pid of a node (for the supervision test's kill -9). */
  nodePid(nodeId: number): number | undefined {
    return this.children.get(nodeId)?.pid;
  }

  get health(): BrokerHealthState {
    return this.healthState;
  }

  get healthDetail(): string {
    return this.healthDetailText;
  }

  /** Tells the listener each change of the broker's health (for the workbench's badge). */
  onHealth(listener: (state: BrokerHealthState, detail: string) => void): () => void {
    this.healthListeners.add(listener);
    return () => this.healthListeners.delete(listener);
  }

  private setHealth(state: BrokerHealthState, detail: string): void {
    this.healthState = state;
    this.healthDetailText = detail;
    for (const listener of this.healthListeners) listener(state, detail);
  }

  private onNodeExit(node: BrokerNode, child: ChildProcess): void {
    if (!this.supervising || this.stoppedOnPurpose.has(node.nodeId) || this.children.get(node.nodeId) !== child || this.restarting || this.recovery) return;
    const how = child.signalCode ?? `code ${child.exitCode}`;
    this.crashLoop.exited();
    this.log(`Kafka node ${node.nodeId} exited on its own (${how}): restarting it.`);
    this.setHealth('restarting', `node ${node.nodeId} exited (${how}); restarting`);
    this.superviseRecovery();
  }

  private superviseRecovery(): void {
    this.recovery ??= this.recover().finally(() => (this.recovery = null));
  }

  /**
   * Starts again every node that is down (and not stopped on purpose), with backoff; a start
   * that fails counts towards the crash-loop rule, and once it holds the state is quarantined
   * and the broker starts afresh (recovery.ts).
   */
  private async recover(): Promise<void> {
    try {
      await retry(
        async (attempt) => {
          if (!this.supervising) return;
          if (this.crashLoop.poisoned) return await this.startAfresh();
          if (attempt > 0) this.log(`Kafka: restart try ${attempt + 1}`);
          for (const node of this.nodes) {
            if (this.stoppedOnPurpose.has(node.nodeId) || this.isRunning(node.nodeId)) continue;
            try {
              await this.startNode(node.nodeId);
            } catch (err) {
              this.crashLoop.startFailed();
              await this.terminate(node.nodeId);
              throw err;
            }
          }
        },
        { retries: 8, minDelayMs: 1_000, maxDelayMs: 30_000, shouldRetry: () => this.supervising },
      );
      if (this.supervising && this.isRunning()) {
        this.crashLoop.ready();
        this.log('Kafka is back.');
        this.setHealth('up', 'restarted');
      }
    } catch (err) {
      this.log(`Kafka could not be restarted: ${(err as Error).message}`);
      this.setHealth('down', `the broker could not be restarted (${(err as Error).message}): restart the server`);
    }
  }

  /** Stops every node, moves their state to quarantine (recovery.ts), formats afresh and starts. */
  private async startAfresh(): Promise<void> {
    for (const node of this.nodes) await this.terminate(node.nodeId);
    this.quarantineState();
    const java = findJava();
    this.formatIfNeeded(java.command);
    for (const node of this.nodes) this.spawnNode(node, java.command);
    try {
      await this.waitUntilReady();
    } catch (err) {
      this.crashLoop.startFailed();
      for (const node of this.nodes) await this.terminate(node.nodeId);
      throw err;
    }
  }

  private quarantineState(): void {
    const where = quarantine(this.dataDir, [...this.nodes.map((n) => path.basename(this.nodeDir(n.nodeId))), 'cluster-id']);
    this.crashLoop.reset();
    const line = `Kafka failed ${CRASH_LOOP.failedStarts} starts in a row: its data is taken as unusable, moved to ${displayPath(where)}, and a fresh broker is started (no topics, ACLs or transactions).`;
    this.log(line);
    this.setHealth('restarting', line);
  }

  /** Kills a node's JVM without marking it stopped on purpose, and waits for its exit. */
  private async terminate(nodeId: number): Promise<void> {
    const child = this.children.get(nodeId);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGKILL');
    await exited;
  }

  private watchdogTarget() {
    return {
      watched: () =>
        this.supervising && !this.restarting && !this.recovery
          ? this.nodes.filter((n) => !this.stoppedOnPurpose.has(n.nodeId) && !this.startingNodes.has(n.nodeId) && this.isRunning(n.nodeId))
          : [],
      down: (nodeId: number, reason: string) => this.setHealth('down', `node ${nodeId} does not answer a metadata request: ${reason}`),
      up: (nodeId: number) => this.healthState !== 'up' && this.setHealth('up', `node ${nodeId} answers again`),
      wedged: (nodeId: number, silentMs: number) => {
        this.log(`Kafka node ${nodeId} has answered nothing for ${Math.round(silentMs / 1000)} s: killing it, the supervisor starts it again.`);
        this.children.get(nodeId)?.kill('SIGKILL');
      },
    };
  }

  private restarting: Promise<void> | null = null;

  /** Restarts each node's JVM has done in place (restart-in-jvm.ts). */
  private readonly restartsInJvm = new WeakMap<ChildProcess, number>();

  /**
   * The grader's "broker bounce": a clean stop and start with the same data. Concurrent calls
   * share one bounce. Each node restarts inside its running JVM; if one cannot, every node is
   * stopped and started as a new JVM.
   */
  restart(): Promise<void> {
    this.restarting ??= (async () => {
      try {
        if (await this.restartInPlace()) {
          await this.waitUntilReady();
          this.crashLoop.ready();
          return;
        }
        await Promise.all(this.nodes.map((n) => this.stopNode(n.nodeId)));
        const java = findJava();
        for (const node of this.nodes) this.spawnNode(node, java.command);
        await this.waitUntilReady();
        this.crashLoop.ready();
      } catch (err) {
        // A bounce that does not come back is a failed start like any other: the supervisor
        // takes over (and the grade that asked for it is told).
        this.crashLoop.startFailed();
        for (const node of this.nodes) await this.terminate(node.nodeId);
        if (this.supervising) {
          this.setHealth('restarting', `the broker did not come back from a restart; restarting it`);
          this.restarting = null;
          this.superviseRecovery();
        }
        throw err;
      } finally {
        this.restarting = null;
      }
    })();
    return this.restarting;
  }

  /** Every node restarted inside its JVM; false (after logging why) when one could not be. */
  private async restartInPlace(): Promise<boolean> {
    const children = this.nodes.map((n) => this.children.get(n.nodeId));
    if (children.some((c) => !c || (this.restartsInJvm.get(c) ?? 0) >= this.restartsPerJvm)) return false;
    const outcomes = await Promise.all(this.nodes.map((n, i) => restartInJvm(children[i]!, this.logPath(n.nodeId), this.readyTimeoutMs)));
    outcomes.forEach((outcome, i) => {
      if (outcome.ok) this.restartsInJvm.set(children[i]!, (this.restartsInJvm.get(children[i]!) ?? 0) + 1);
      else this.log(`Kafka node ${this.nodes[i]!.nodeId} did not restart in its JVM (${outcome.why}): starting a new one.`);
    });
    return outcomes.every((o) => o.ok);
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
    this.startingNodes.add(nodeId);
    try {
      await this.startNodeNow(node);
    } finally {
      this.startingNodes.delete(nodeId);
    }
  }

  private async startNodeNow(node: BrokerNode): Promise<void> {
    const nodeId = node.nodeId;
    await assertPortsFree(node);
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
    return liveOwner(dataDir);
  }

  private nodeDir(nodeId: number): string {
    return path.join(this.dataDir, `node-${nodeId}`);
  }

  private configPath(nodeId: number): string {
    return path.join(this.dataDir, `node-${nodeId}.properties`);
  }

  private formatIfNeeded(javaCommand: string): void {
    formatIfNeeded({ dataDir: this.dataDir, nodes: this.nodes, javaCommand, nodeDir: (id) => this.nodeDir(id), configPath: (id) => this.configPath(id), logPath: (id) => this.logPath(id) });
  }

  private spawnNode(node: BrokerNode, javaCommand: string): void {
    const logFile = this.logPath(node.nodeId);
    const out = fs.openSync(logFile, 'a');
    fs.writeSync(out, `\n===== ${new Date().toISOString()} starting node ${node.nodeId} =====\n`);
    const child = spawn(
      javaCommand,
      brokerJvmArgs({ nodeId: node.nodeId, heapMb: this.heapMb, configPath: this.configPath(node.nodeId) }),
      // stdin stays an open pipe, written only to restart the server (restart-in-jvm.ts): its EOF
      // is the JVM's signal that we died.
      { stdio: ['pipe', out, out] },
    );
    fs.closeSync(out);
    child.on('error', () => {}); // findJava checked the command; the JVM's own failures show as its exit (onNodeExit)
    // A restart written just as the JVM dies fails with EPIPE on this stream, and an unheard stream
    // error would throw out of the event loop; the death itself shows as the exit (onNodeExit).
    child.stdin?.on('error', () => {});
    this.stoppedOnPurpose.delete(node.nodeId);
    this.children.set(node.nodeId, child);
    child.once('exit', () => this.onNodeExit(node, child));
  }

  private waitUntilReady(): Promise<void> {
    return waitUntilReady({
      brokers: this.brokers,
      nodeCount: this.nodes.length,
      timeoutMs: this.readyTimeoutMs,
      assertAlive: () => this.nodes.forEach((n) => this.assertAlive(n.nodeId)),
      logFile: this.logPath(1),
    });
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
