/**
 * One run or grade of a monitoring lab (kind: 'monitor'). The learner's program is a watcher, not
 * a pipeline: it gets WATCH_TOPIC, ALERTS_TOPIC and two thresholds, and must write an alert when a
 * transaction has been open for HANG_SECONDS and holds back at least BLOCKED_LAG_THRESHOLD offsets
 * (HWM - LSO) of a WATCH_TOPIC partition, and stay quiet otherwise.
 *
 * The grade, in order (every id is in the attempt's namespace):
 *  1. a background workload: a few transactional producers commit short transactions on the busy
 *     partitions of WATCH_TOPIC (and on another team's topic) the whole time;
 *  2. once the monitor's consumer group is up, three look-alikes: a long transaction on a quiet
 *     partition (open longer than HANG_SECONDS, but it blocks a single record), a hanging
 *     transaction on the other team's topic (not ours to report) and a slow but healthy one on a
 *     busy partition that commits before HANG_SECONDS (after its blocked lag passed the threshold);
 *  3. one hanging transaction per 'hanging-transaction' fault: a record sent on a busy partition,
 *     never committed; the workload piles up behind it. The grader waits for an alert (at most
 *     reportWithinSeconds after it is due), then fences it: a new producer with the same
 *     transactional id (InitProducerId) makes the coordinator abort it;
 *  4. everything stops and monitor-verify.ts judges the alerts.
 * The grader reads the alerts (LogAppendTime, so the broker stamps when each was written) and the
 * coordinator's log (__transaction_state) live, for the timeline and the evidence.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Consumer, Kafka, Producer, Transaction } from 'kafkajs';
import type { MonitorSpec } from '../../src/shared/lab.ts';
import { REPORT_VERSION, type FaultRecord, type GradeReport, type TimelineEvent, type Verdict } from '../../src/shared/report.ts';
import { maintenanceFor } from '../broker/maintenance.ts';
import { describeError, KafkaIqError } from '../core/errors.ts';
import { ROOT_DIR } from '../core/paths.ts';
import { retry } from '../core/retry.ts';
import { createKafka } from '../kafka/client.ts';
import { OffsetsProbe } from '../kafka/inspect.ts';
import { decodeTransactionLogRecord, TRANSACTION_STATE_TOPIC } from '../kafka/transaction-log.ts';
import type { LoadedLab } from '../labs/load-lab.ts';
import type { Attempt } from './attempt.ts';
import { DEFAULTS_ENV } from './child/protocol.ts';
import { compileProgram } from './compile.ts';
import type { ManualFault } from './contract.ts';
import { randomSeed, seededRandom } from './fault-plan.ts';
import type { AttemptOptions } from './lab-attempt.ts';
import { judgeMonitor, type AlertSeen, type HangIncident, type LookAlike } from './monitor-verify.ts';
import { OutputSink } from './output-sink.ts';
import { ProgramInstance, type ProgramSource } from './program-instance.ts';

/** The grader's own transactions stay open this long at most, even if the grader dies. */
const GRADER_TXN_TIMEOUT_MS = 120_000;
/** How long to wait for the monitor's consumer group before starting anyway. */
const READY_TIMEOUT_MS = 12_000;
const SAMPLE_MS = 250;
const MAX_SELF_RESTARTS = 15;
const OTHER_TEAM_PARTITIONS = 3;

/**
 * A promise that is awaited later, with a handler attached now: if it fails while something else
 * is awaited first, Node must not take it for an unhandled rejection (which ends the process).
 */
function settled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

/** Whether an alert record names this transactional id (its JSON's transactionalId). */
function namesId(alert: AlertSeen, id: string): boolean {
  try {
    return JSON.parse(alert.value ?? '')?.transactionalId === id;
  } catch {
    return false;
  }
}

interface Tracked {
  role: 'slow' | 'idle' | 'other' | 'hang';
  transactionalId: string;
  topic: string;
  partition: number;
  producer: Producer;
  /** A transaction begun on the client only (nothing sent yet): opening it is then a single send. */
  begun: Transaction | null;
  txn: Transaction | null;
  openedAtMs: number | null;
  offset: number | null;
  endedAtMs: number | null;
  maxLag: number;
}

interface Cycle {
  idle: Tracked;
  other: Tracked;
  slow: Tracked;
  hangs: Tracked[];
}

interface Incident extends Tracked {
  n: number;
  qualifiesAtMs: number;
  deadlineMs: number;
  lagAtQualify: number | null;
  problem?: string;
}

export class MonitorAttempt implements Attempt {
  readonly namespace: string;
  readonly groupId: string;
  private readonly kafka: Kafka;
  private readonly lab: LoadedLab;
  private readonly spec: MonitorSpec;
  private readonly sink: OutputSink;
  private readonly workDir: string;
  private readonly otherTopic: string;
  private source: ProgramSource | null = null;
  private startedAt = Date.now();
  private phase: 'compiling' | 'preparing' | 'running' | 'settling' | 'verifying' | 'done' = 'compiling';
  private progressTimer: NodeJS.Timeout | null = null;
  private stopping = false;
  private stopRequested: () => void = () => {};
  private readonly stopSignal = new Promise<void>((resolve) => (this.stopRequested = resolve));

  private monitor: { instance: ProgramInstance; incarnation: number; restartsInARow: number } | null = null;
  private readonly expectedExits = new WeakSet<ProgramInstance>();
  private restarts = 0;
  private selfExits = 0;

  private readonly faults: FaultRecord[] = [];
  private readonly timeline: TimelineEvent[] = [];
  private readonly producers: Producer[] = [];
  private readonly tracked: Tracked[] = [];
  private readonly incidents: Incident[] = [];
  private readonly lookAlikes: LookAlike[] = [];
  private readonly alerts: AlertSeen[] = [];
  /** What the coordinator's log said about our own transactional ids: state changes, in order. */
  private readonly coordinator = new Map<string, { atMs: number; state: string; partitions: string; startMs: number | null }[]>();
  private graderConsumer: Consumer | null = null;
  private alertsPosition = 0;
  private probe: OffsetsProbe | null = null;
  private sampler: NodeJS.Timeout | null = null;
  private sampling = false;
  private workload = { stop: false, loops: [] as Promise<void>[], committed: 0, transactions: 0, failures: 0 };
  private incidentsPlanned = 0;
  private nextApp = 1;
  private random: () => number = Math.random;

  constructor(private readonly options: AttemptOptions) {
    this.lab = options.lab;
    if (!this.lab.definition.monitor) throw new KafkaIqError('LAB_INVALID', `Lab "${this.lab.id}" has no monitor block.`);
    this.spec = this.lab.definition.monitor;
    this.namespace = options.namespace;
    this.groupId = `${options.namespace}-group`;
    this.kafka = createKafka(options.brokers, `kafkaiq-grader-${options.namespace}`);
    this.workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-'));
    this.sink = new OutputSink((instance, stream, line) => options.listener.output(instance, stream, line), this.workDir);
    this.otherTopic = `${options.namespace}-other-team`;
  }

  realTopic(logical: string): string {
    return `${this.namespace}-${logical}`;
  }

  private get watchTopic(): string {
    return this.realTopic(this.spec.watch);
  }

  private get alertsTopic(): string {
    return this.realTopic(this.spec.alerts);
  }

  topicEnv(): Record<string, string> {
    return Object.fromEntries(this.lab.definition.topics.map((t) => [t.env, this.realTopic(t.name)]));
  }

  requestStop(): void {
    this.stopRequested();
  }

  private elapsed(): number {
    return Date.now() - this.startedAt;
  }

  private get limitMs(): number {
    const { mode } = this.options;
    return mode === 'run' ? (this.options.runLimitMs ?? 10 * 60_000) : mode === 'quick' ? this.lab.definition.quickTimeLimitMs : this.lab.definition.timeLimitMs;
  }

  /** Sleeps, but wakes at once when the attempt is stopped. True if it slept the whole time. */
  private async pause(ms: number): Promise<boolean> {
    if (this.stopping || ms <= 0) return !this.stopping;
    const stopped = await Promise.race([this.stopSignal.then(() => true), sleep(ms, false, { ref: false })]);
    if (stopped) this.stopping = true;
    return !stopped;
  }

  // ---- the two modes -------------------------------------------------------------------------

  async run(): Promise<void> {
    try {
      this.random = seededRandom(randomSeed());
      await this.prepare();
      this.startMonitor();
      this.phase = 'running';
      this.startWorkload();
      this.sink.system(
        `Run: ${this.spec.workload.producers} producers commit short transactions on WATCH_TOPIC partitions ${this.spec.workload.partitions.join(', ')}. ` +
          `Every cycle the grader adds a slow transaction, a long one on a quiet partition, one hanging on another team's topic, then leaves one hanging on WATCH_TOPIC and fences it later. ` +
          `Alerts your monitor writes to ALERTS_TOPIC are echoed here.`,
      );
      let next = settled(this.prepareCycle(1));
      await this.waitForMonitor();
      while (!this.stopping && this.elapsed() < this.limitMs) {
        await this.playCycle(await next, { holdMs: (this.spec.hangSeconds + this.spec.reportWithinSeconds + 6) * 1000 });
        next = settled(this.prepareCycle(1));
        if (!(await this.pause(5_000))) break;
      }
      await next.catch(() => {});
      if (this.elapsed() >= this.limitMs) this.sink.system(`Run stopped after its limit of ${Math.round(this.limitMs / 60_000)} min.`);
    } finally {
      await this.shutdown();
    }
  }

  async grade(): Promise<GradeReport> {
    const seed = this.options.seed ?? randomSeed();
    this.random = seededRandom(seed);
    const specs = this.options.mode === 'quick' ? this.lab.definition.faults.quick : this.lab.definition.faults.full;
    this.incidentsPlanned = specs.filter((f) => f.kind === 'hanging-transaction').length;
    const startedAtIso = new Date().toISOString();
    let report: GradeReport;
    try {
      report = await this.gradeScenario(seed, startedAtIso);
    } catch (err) {
      const infrastructure = !(err instanceof KafkaIqError) || err.isInfrastructure;
      const compile = err instanceof KafkaIqError && err.code === 'COMPILE_FAILED';
      report = this.report(
        seed,
        startedAtIso,
        compile ? 'fail' : 'error',
        compile ? `Your program does not compile: ${describeError(err)}` : `The grader could not finish (${describeError(err)}); this is not your program's fault, try again.`,
        [],
      );
      if (!infrastructure && !compile) report.message = describeError(err);
    } finally {
      await this.shutdown();
    }
    return report;
  }

  private async gradeScenario(seed: number, startedAtIso: string): Promise<GradeReport> {
    await this.prepare();
    const { hangSeconds, blockedLagThreshold, reportWithinSeconds } = this.spec;
    this.sink.system(
      `Grading ${this.lab.id} (${this.options.mode === 'quick' ? 'quick' : 'full'}), seed ${seed}: ${this.incidentsPlanned} hanging transaction(s) among look-alikes; ` +
        `HANG_SECONDS=${hangSeconds}, BLOCKED_LAG_THRESHOLD=${blockedLagThreshold}, alerts due within ${reportWithinSeconds} s.`,
    );
    this.startMonitor();
    this.phase = 'running';
    // While the scenario runs, no other attempt in this process restarts the broker under it:
    // the timing of the alerts is what is graded.
    await maintenanceFor(this.options.brokers).withShared(async () => {
      this.startWorkload();
      const cycle = settled(this.prepareCycle(this.incidentsPlanned));
      await this.waitForMonitor();
      await this.playCycle(await cycle, { holdMs: null });
      this.phase = 'settling';
      await this.pause(1_000);
      await this.stopMonitor();
      await this.stopWorkload();
      await this.endOpen();
      await this.catchUpAlerts(4_000);
    });

    this.phase = 'verifying';
    this.emitProgress();
    const judged = judgeMonitor({
      watchTopic: this.watchTopic,
      threshold: blockedLagThreshold,
      hangSeconds,
      reportWithinSeconds,
      incidents: this.incidents.map((i) => this.toHangIncident(i)),
      lookAlikes: this.lookAlikes,
      alerts: this.alerts,
      quietSummary: this.quietSummary(),
    });
    const checks = this.lab.definition.checks.map((name) => judged.checks.get(name)!);
    const failed = checks.filter((c) => !c.passed);
    const notCreated = this.incidents.filter((i) => !this.created(i));
    const missingIncidents = this.incidentsPlanned - this.incidents.length;
    let verdict: Verdict;
    let message: string;
    const realFailures = notCreated.length || missingIncidents ? failed.filter((c) => c.name !== 'hanging-transaction-reported') : failed;
    if (checks.length === 0) {
      verdict = 'error';
      message = 'No checks ran, so nothing was proven: the lab must name at least one check.';
    } else if (realFailures.length) {
      verdict = 'fail';
      message = `${realFailures.length} of ${checks.length} checks failed: ${realFailures.map((c) => c.name).join(', ')}.`;
    } else if (notCreated.length || missingIncidents || this.incidents.length === 0) {
      verdict = 'inconclusive';
      const why = notCreated.map((i) => `#${i.n} ${i.problem ?? `its blocked lag reached only ${i.lagAtQualify ?? 0} (threshold ${blockedLagThreshold})`}`);
      message = `The grader could not leave every planned transaction hanging as intended (${why.join('; ') || `${missingIncidents} never opened`}), so the monitor was not really tested: grade again.`;
    } else {
      verdict = 'pass';
      const delays = [...judged.reported].map(([n, a]) => (a.atMs - this.incidents.find((i) => i.n === n)!.qualifiesAtMs) / 1000);
      message =
        `Both checks held: the monitor named all ${this.incidents.length} hanging transaction(s) ${delays.map((d) => `${Math.max(0, d).toFixed(1)} s`).join(' and ')} after they were due, ` +
        `and raised no false alarm in ${this.alerts.length} alert(s).`;
    }
    return this.report(seed, startedAtIso, verdict, message, checks);
  }

  private created(i: Incident): boolean {
    return !i.problem && i.offset !== null && (i.lagAtQualify ?? 0) >= this.spec.blockedLagThreshold;
  }

  private toHangIncident(i: Incident): HangIncident {
    const states = this.coordinator.get(i.transactionalId) ?? [];
    const ongoing = states.find((s) => s.state === 'Ongoing');
    const after = states.filter((s) => ongoing && s.atMs >= ongoing.atMs && s.state !== 'Ongoing').map((s) => `${s.state} at +${(s.atMs / 1000).toFixed(1)} s`);
    return {
      n: i.n,
      transactionalId: i.transactionalId,
      partition: i.partition,
      openedAtMs: i.openedAtMs ?? 0,
      offset: i.offset ?? -1,
      qualifiesAtMs: i.qualifiesAtMs,
      deadlineMs: i.deadlineMs,
      endedAtMs: i.endedAtMs,
      lagAtQualify: i.lagAtQualify,
      maxLag: i.maxLag,
      created: this.created(i),
      ...(i.problem ? { problem: i.problem } : {}),
      ...(ongoing
        ? { coordinator: `__transaction_state showed ${i.transactionalId} Ongoing on ${ongoing.partitions} from +${(ongoing.atMs / 1000).toFixed(1)} s${after.length ? `, then ${after.join(', ')}` : ''}` }
        : {}),
    };
  }

  private quietSummary(): string {
    const part: string[] = [];
    const slow = this.tracked.find((t) => t.role === 'slow');
    const idle = this.tracked.find((t) => t.role === 'idle');
    if (slow?.endedAtMs != null && slow.openedAtMs != null) part.push(`a slow transaction (committed after ${((slow.endedAtMs - slow.openedAtMs) / 1000).toFixed(1)} s, blocked lag up to ${slow.maxLag})`);
    if (idle?.endedAtMs != null && idle.openedAtMs != null) part.push(`a long one on quiet partition ${idle.partition} (open ${((idle.endedAtMs - idle.openedAtMs) / 1000).toFixed(1)} s, blocked lag ${idle.maxLag})`);
    if (this.tracked.some((t) => t.role === 'other')) part.push(`one hanging on another team's topic`);
    part.push(`${this.workload.transactions} short transactions of ${this.spec.workload.producers} producers`);
    return part.join(', ');
  }

  private report(seed: number, startedAt: string, verdict: Verdict, message: string, checks: GradeReport['checks']): GradeReport {
    this.phase = 'done';
    this.emitProgress();
    return {
      version: REPORT_VERSION,
      lab: this.lab.id,
      verdict,
      message,
      seed,
      quick: this.options.mode === 'quick',
      startedAt,
      checks,
      faults: this.faults,
      timeline: this.timeline,
      stats: {
        inputs: this.workload.committed,
        abortedInputs: this.incidents.filter((i) => i.offset !== null).length,
        outputs: this.alerts.length,
        abortedRecords: 0,
        restarts: this.restarts,
        selfExits: this.selfExits,
        durationMs: this.elapsed(),
      },
    };
  }

  async deleteTopics(): Promise<void> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      await admin.deleteTopics({ topics: [...Object.values(this.topicEnv()), this.otherTopic], timeout: 10_000 });
    } catch {
      // Already gone, or the broker is down.
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  // ---- preparation -----------------------------------------------------------------------------

  private async prepare(): Promise<void> {
    this.startedAt = Date.now();
    this.phase = 'compiling';
    this.progressTimer = setInterval(() => this.emitProgress(), 500);
    this.emitProgress();
    const { program } = this.options;
    if (program.kind === 'code') {
      const compiled = await compileProgram(program.code, this.workDir);
      if (compiled.warnings.length) this.options.listener.diagnostics(compiled.warnings);
      this.source = { kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: this.workDir };
    } else {
      this.source = { kind: 'command', command: program.command, cwd: ROOT_DIR };
    }
    this.phase = 'preparing';
    this.emitProgress();
    await maintenanceFor(this.options.brokers).withShared(async () => {
      const stateOffsets = await this.createTopics();
      await this.startGraderConsumer(stateOffsets);
    });
    this.probe = new OffsetsProbe(this.options.brokers);
    this.sampler = setInterval(() => void this.sample(), SAMPLE_MS);
  }

  /** Creates the lab's topics and the other team's topic; returns where __transaction_state ends now. */
  private async createTopics(): Promise<{ partition: number; offset: string }[]> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      const topics = [
        ...this.lab.definition.topics.map((t) => ({
          topic: this.realTopic(t.name),
          numPartitions: t.partitions,
          // The broker stamps each alert with the time it was written: the timing is the broker's, not the program's.
          ...(t.name === this.spec.alerts ? { configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }] } : {}),
        })),
        { topic: this.otherTopic, numPartitions: OTHER_TEAM_PARTITIONS },
      ];
      await retry(() => admin.createTopics({ waitForLeaders: true, topics }), {
        retries: 6,
        minDelayMs: 250,
        maxDelayMs: 2_000,
        shouldRetry: (err) => !/already exists/i.test(describeError(err)),
      });
      return (await admin.fetchTopicOffsets(TRANSACTION_STATE_TOPIC)).map((p) => ({ partition: p.partition, offset: p.offset }));
    } catch (err) {
      throw new KafkaIqError('BROKER_UNREACHABLE', `Kafka did not accept the lab topics (${describeError(err)}): is the broker running? Start it with 'npm run broker'.`, { cause: err });
    } finally {
      await admin.disconnect();
    }
  }

  /**
   * One consumer for the grader's eyes: the alerts topic from its start (read_committed, as an
   * alerting bridge would read it) and the coordinator's log from now on (our own ids only).
   */
  private async startGraderConsumer(stateOffsets: { partition: number; offset: string }[]): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: `${this.namespace}-grader`,
      sessionTimeout: 6_000,
      heartbeatInterval: 1_000,
      maxWaitTimeInMs: 100,
    });
    this.graderConsumer = consumer;
    await consumer.connect();
    await consumer.subscribe({ topics: [this.alertsTopic, TRANSACTION_STATE_TOPIC], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.topic === this.alertsTopic) {
          for (const m of batch.messages) this.onAlert(Number(m.offset), Number(m.timestamp), m.value?.toString() ?? null);
          this.alertsPosition = Math.max(this.alertsPosition, Number(batch.lastOffset()) + 1);
          return;
        }
        for (const m of batch.messages) {
          let record;
          try {
            record = decodeTransactionLogRecord(m.key, m.value);
          } catch {
            continue; // a record type this decoder does not know: not ours to judge
          }
          if (!record?.value || !record.transactionalId.startsWith(`${this.namespace}-`)) continue;
          const states = this.coordinator.get(record.transactionalId) ?? [];
          const partitions = record.value.partitions.map((p) => `${p.topic.startsWith(this.namespace) ? p.topic.slice(this.namespace.length + 1) : p.topic}-[${p.partitions.join(',')}]`).join(' ');
          if (states.at(-1)?.state !== record.value.state) {
            states.push({ atMs: Number(m.timestamp) - this.startedAt, state: record.value.state, partitions, startMs: record.value.startMs === null ? null : record.value.startMs - this.startedAt });
          }
          this.coordinator.set(record.transactionalId, states);
        }
      },
    });
    for (const p of stateOffsets) consumer.seek({ topic: TRANSACTION_STATE_TOPIC, partition: p.partition, offset: p.offset });
  }

  private onAlert(offset: number, timestamp: number, value: string | null): void {
    if (this.alerts.some((a) => a.offset === offset)) return;
    const alert = { atMs: timestamp - this.startedAt, offset, value };
    this.alerts.push(alert);
    const about = (() => {
      try {
        const id = JSON.parse(value ?? '').transactionalId;
        if (this.incidents.some((i) => i.transactionalId === id)) return ' (names a transaction the grader left hanging)';
        const look = this.lookAlikes.find((l) => l.transactionalId === id);
        return look ? ` (names ${look.why.split(':')[0]})` : '';
      } catch {
        return ' (not JSON)';
      }
    })();
    this.sink.system(`ALERTS_TOPIC @${offset} at +${(alert.atMs / 1000).toFixed(1)} s: ${(value ?? 'null').slice(0, 300)}${about}`);
  }

  /** Waits until the grader has read the alerts topic to its end (all alerts counted). */
  private async catchUpAlerts(timeoutMs: number): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      try {
        const [end] = await this.probe!.offsets(this.alertsTopic);
        if (!end || this.alertsPosition >= end.lso) return;
      } catch {
        // the broker is busy: try again
      }
      await sleep(150);
    }
  }

  // ---- the monitor process ---------------------------------------------------------------------

  private env(): Record<string, string> {
    return {
      KAFKA_BROKERS: this.options.brokers.join(','),
      ...this.topicEnv(),
      GROUP_ID: this.groupId,
      BLOCKED_LAG_THRESHOLD: String(this.spec.blockedLagThreshold),
      HANG_SECONDS: String(this.spec.hangSeconds),
      INSTANCE_ID: 'i1',
      KAFKAJS_NO_PARTITIONER_WARNING: '1',
      [DEFAULTS_ENV]: JSON.stringify(this.lab.definition.kafkajs),
    };
  }

  private startMonitor(): void {
    const previous = this.monitor;
    const incarnation = (previous?.incarnation ?? 0) + 1;
    const instance = new ProgramInstance('i1', incarnation, this.source!, this.env());
    this.monitor = { instance, incarnation, restartsInARow: previous?.restartsInARow ?? 0 };
    if (previous) this.restarts++;
    this.mark('start', 'i1', incarnation > 1 ? `incarnation ${incarnation}` : undefined);
    instance.on('line', (stream, line) => this.sink.line('i1', stream, line));
    instance.on('exit', (code, signal) => this.onExit(instance, code, signal));
    this.emitState();
  }

  private onExit(instance: ProgramInstance, code: number | null, signal: NodeJS.Signals | null): void {
    this.mark('exit', 'i1', signal ? `signal ${signal}` : `code ${code}`);
    this.emitState();
    const slot = this.monitor;
    if (this.stopping || !slot || slot.instance !== instance || this.expectedExits.has(instance)) return;
    this.selfExits++;
    if (code !== 0 || signal) slot.restartsInARow++;
    const reason = signal === 'SIGXCPU' ? 'its CPU-time limit' : signal ? `signal ${signal}` : `code ${code}`;
    if (slot.restartsInARow > MAX_SELF_RESTARTS) {
      this.sink.system(`i1 exited (${reason}) ${MAX_SELF_RESTARTS} times in a row; no more restarts.`);
      return;
    }
    const delay = Math.min(2_000, 250 * Math.max(1, slot.restartsInARow));
    this.sink.system(`i1 exited on its own (${reason}); restarting it in ${(delay / 1000).toFixed(1)} s, like a supervisor would.`);
    setTimeout(() => {
      if (!this.stopping && this.monitor?.instance === instance) this.startMonitor();
    }, delay).unref();
  }

  private async stopMonitor(): Promise<void> {
    const instance = this.monitor?.instance;
    if (!instance) return;
    this.expectedExits.add(instance);
    await instance.stop(3_000);
  }

  /**
   * The monitor is ready when its consumer group (GROUP_ID) is stable with a member, plus a moment
   * for its first fetches. A monitor that uses another group id just gets the time limit.
   */
  private async waitForMonitor(): Promise<void> {
    const admin = this.kafka.admin();
    const until = Date.now() + READY_TIMEOUT_MS;
    try {
      await admin.connect();
      while (Date.now() < until && !this.stopping) {
        try {
          const { groups } = await admin.describeGroups([this.groupId]);
          if (groups[0]?.state === 'Stable' && groups[0].members.length > 0) {
            this.sink.system(`the monitor joined its consumer group (GROUP_ID) at +${(this.elapsed() / 1000).toFixed(1)} s`);
            await this.pause(1_000);
            return;
          }
        } catch {
          // not yet
        }
        await this.pause(250);
      }
      if (!this.stopping) this.sink.system(`the monitor has no stable consumer group GROUP_ID after ${READY_TIMEOUT_MS / 1000} s: starting anyway`);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  // ---- the grader's transactions ---------------------------------------------------------------

  private async producer(transactionalId: string, transactionTimeout = GRADER_TXN_TIMEOUT_MS): Promise<Producer> {
    const producer = this.kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout });
    await producer.connect();
    this.producers.push(producer);
    return producer;
  }

  private appId(): string {
    return `${this.namespace}-app-${this.nextApp++}`;
  }

  private startWorkload(): void {
    const { producers, pauseMs, partitions, recordsPerPartition } = this.spec.workload;
    this.workload.stop = false;
    this.mark('wave', 'grader', `background workload: ${producers} producers, short committed transactions on WATCH_TOPIC partitions ${partitions.join(', ')}`);
    for (let i = 0; i < producers; i++) {
      const id = this.appId();
      this.lookAlikes.push({ transactionalId: id, why: 'a workload producer: its short transactions commit within milliseconds' });
      this.workload.loops.push(this.workloadLoop(id, partitions, pauseMs, recordsPerPartition));
    }
  }

  private async workloadLoop(transactionalId: string, partitions: number[], pauseMs: number, perPartition: number): Promise<void> {
    let producer: Producer | null = null;
    let n = 0;
    while (!this.workload.stop && !this.stopping) {
      try {
        producer ??= await this.producer(transactionalId, 30_000);
        const txn = await producer.transaction();
        try {
          await txn.sendBatch({
            topicMessages: [
              {
                topic: this.watchTopic,
                messages: partitions.flatMap((p) =>
                  Array.from({ length: perPartition }, (_, i) => ({ key: `order-${p}`, value: JSON.stringify({ from: transactionalId, n, i }), partition: p })),
                ),
              },
              { topic: this.otherTopic, messages: Array.from({ length: OTHER_TEAM_PARTITIONS }, (_, p) => ({ key: `invoice-${p}`, value: `n=${n}`, partition: p })) },
            ],
          });
          await txn.commit();
        } catch (err) {
          await txn.abort().catch(() => {});
          throw err;
        }
        n++;
        this.workload.transactions++;
        this.workload.committed += partitions.length * perPartition;
      } catch {
        // A broker restart (Run mode) or a slow moment: try again shortly.
        this.workload.failures++;
        await sleep(300);
      }
      await sleep(pauseMs);
    }
  }

  private async stopWorkload(): Promise<void> {
    this.workload.stop = true;
    await Promise.all(this.workload.loops.splice(0));
    this.mark('wave', 'grader', `background workload stopped after ${this.workload.transactions} transactions`);
  }

  /** Opens a transaction with one record per partition; the first partition's offset is kept. */
  private async open(t: Tracked, partitions: number[]): Promise<void> {
    const txn = t.begun ?? (await t.producer.transaction());
    t.openedAtMs = this.elapsed();
    const [meta] = await txn.send({
      topic: t.topic,
      messages: partitions.map((p) => ({ key: `${t.role}-${p}`, value: JSON.stringify({ from: t.transactionalId, role: t.role }), partition: p })),
    });
    t.txn = txn;
    t.offset = meta ? Number(meta.baseOffset) : null;
  }

  private async commit(t: Tracked): Promise<void> {
    if (!t.txn || t.endedAtMs !== null) return;
    await t.txn.commit();
    t.endedAtMs = this.elapsed();
    await t.producer.disconnect().catch(() => {});
  }

  /**
   * Ends a hanging transaction as an operator would: a new producer with the same transactional id
   * registers it again (InitProducerId), and the coordinator bumps the epoch and aborts what the old
   * one left open. If that fails, the old producer aborts it itself.
   */
  private async fence(t: Tracked): Promise<string> {
    if (!t.txn || t.endedAtMs !== null) return 'already ended';
    let fencer: Producer | null = null;
    try {
      fencer = await this.producer(t.transactionalId);
      const txn = await fencer.transaction();
      await txn.abort();
      t.endedAtMs = this.elapsed();
      return 'fenced: a new producer registered the same transactional id, and the coordinator aborted the open transaction';
    } catch (err) {
      await t.txn.abort().catch(() => {});
      t.endedAtMs = this.elapsed();
      return `aborted by its producer (fencing failed: ${describeError(err)})`;
    } finally {
      await Promise.all([fencer?.disconnect(), t.producer.disconnect()].map((p) => p?.catch(() => {})));
    }
  }

  /** Every transaction the grader still holds open is ended (the run is over). */
  private async endOpen(): Promise<void> {
    await Promise.all(this.tracked.filter((t) => t.txn && t.endedAtMs === null).map((t) => this.fence(t).catch(() => '')));
  }

  /** One measurement of the watched topic: HWM - LSO per partition, credited to whichever of our transactions holds that LSO. */
  private async sample(): Promise<void> {
    if (this.sampling || !this.probe || this.stopping) return;
    this.sampling = true;
    try {
      const offsets = await this.probe.offsets(this.watchTopic);
      const now = this.elapsed();
      for (const t of this.tracked) {
        if (t.topic !== this.watchTopic || t.offset === null || t.endedAtMs !== null) continue;
        const p = offsets.find((o) => o.partition === t.partition);
        if (!p || p.lso !== t.offset) continue;
        const lag = p.hwm - p.lso;
        t.maxLag = Math.max(t.maxLag, lag);
        const incident = t as Incident;
        if (t.role === 'hang' && incident.lagAtQualify === null && now >= incident.qualifiesAtMs) incident.lagAtQualify = lag;
      }
    } catch {
      // The broker is busy or restarting: the next sample will do.
    } finally {
      this.sampling = false;
    }
  }

  /**
   * The cast of one cycle, ready to act: each producer connected, registered with the coordinator
   * (InitProducerId) and with a transaction begun on the client, so opening one is a single send.
   * Prepared while the monitor starts, in parallel: on a busy machine each of these takes seconds.
   */
  private async prepareCycle(hangs: number): Promise<Cycle> {
    const watch = this.lab.definition.topics.find((t) => t.name === this.spec.watch)!;
    const busy = this.spec.workload.partitions;
    const quiet = Array.from({ length: watch.partitions }, (_, p) => p).filter((p) => !busy.includes(p));
    const pick = <T>(items: T[]): T => items[Math.floor(this.random() * items.length)]!;
    const make = async (role: Tracked['role'], transactionalId: string, topic: string, partition: number): Promise<Tracked> => {
      const producer = await this.producer(transactionalId);
      const begun = await producer.transaction();
      return { role, transactionalId, topic, partition, producer, begun, txn: null, openedAtMs: null, offset: null, endedAtMs: null, maxLag: 0 };
    };
    // Each hanging transaction on a busy partition; consecutive ones on different partitions.
    const order: number[] = [];
    while (order.length < hangs) order.push(...[...busy].sort(() => this.random() - 0.5));
    const ids = {
      idle: `${this.namespace}-batch-${this.nextApp++}`,
      other: `${this.namespace}-billing-${this.nextApp++}`,
      slow: this.appId(),
      hangs: order.slice(0, hangs).map(() => this.appId()),
    };
    const [idle, other, slow, ...hanging] = await Promise.all([
      make('idle', ids.idle, this.watchTopic, pick(quiet)),
      make('other', ids.other, this.otherTopic, 0),
      make('slow', ids.slow, this.watchTopic, pick(busy)),
      ...ids.hangs.map((id, k) => make('hang', id, this.watchTopic, order[k]!)),
    ]);
    return { idle: idle!, other: other!, slow: slow!, hangs: hanging };
  }

  /**
   * One cycle: the look-alikes, then the hanging transactions one after another. In a grade
   * (holdMs null) each hanging transaction is fenced shortly after its alert or its deadline; in a
   * Run it hangs for holdMs.
   */
  private async playCycle(cycle: Cycle, { holdMs }: { holdMs: number | null }): Promise<void> {
    const { hangSeconds, blockedLagThreshold, reportWithinSeconds } = this.spec;
    const { idle, other, slow } = cycle;

    // A long transaction that blocks nobody (a quiet partition, open past HANG_SECONDS), and a
    // hanging transaction on another team's topic: real, but not on WATCH_TOPIC.
    this.tracked.push(idle, other);
    await Promise.all([this.open(idle, [idle.partition]), this.open(other, Array.from({ length: OTHER_TEAM_PARTITIONS }, (_, p) => p))]);
    const idleOpenMs = (hangSeconds + reportWithinSeconds + 1) * 1000;
    this.lookAlikes.push(
      { transactionalId: idle.transactionalId, why: `a long transaction on quiet partition ${idle.partition}: open ${idleOpenMs / 1000} s, but it held back a single record (below BLOCKED_LAG_THRESHOLD)` },
      { transactionalId: other.transactionalId, why: `hanging on another team's topic, not on WATCH_TOPIC` },
    );
    this.sink.system(
      `grader: ${idle.transactionalId} holds a transaction on quiet partition ${idle.partition} for ${idleOpenMs / 1000} s; ${other.transactionalId} leaves one hanging on another team's topic`,
    );
    const idleDone = (async () => {
      await this.pause(idleOpenMs - (this.elapsed() - idle.openedAtMs!));
      await this.commit(idle).catch(() => {});
      this.mark('commit', 'grader', `${idle.transactionalId}: long transaction on a quiet partition committed`);
    })();

    // A slow but healthy transaction: blocks a busy partition past the threshold, commits in time.
    if (await this.pause(500)) {
      this.tracked.push(slow);
      await this.open(slow, [slow.partition]);
      const latest = slow.openedAtMs! + (hangSeconds - 1.3) * 1000;
      const earliest = slow.openedAtMs! + Math.min(2_000, (hangSeconds - 1.3) * 1000);
      while (this.elapsed() < latest && !this.stopping && !(this.elapsed() >= earliest && slow.maxLag >= 2 * blockedLagThreshold)) await sleep(100);
      await this.commit(slow);
      const slowSecs = ((slow.endedAtMs! - slow.openedAtMs!) / 1000).toFixed(1);
      this.lookAlikes.push({ transactionalId: slow.transactionalId, why: `a slow but healthy transaction: it committed after ${slowSecs} s, before HANG_SECONDS (${hangSeconds})` });
      this.mark('commit', 'grader', `${slow.transactionalId}: slow transaction on partition ${slow.partition} committed after ${slowSecs} s (blocked lag up to ${slow.maxLag})`);
      this.sink.system(
        `grader: ${slow.transactionalId} held partition ${slow.partition} for ${slowSecs} s (blocked lag up to ${slow.maxLag}), then committed: a slow transaction, not a hanging one`,
      );
    }

    for (const incident of cycle.hangs) {
      if (!(await this.pause(500))) break;
      await this.hang(incident, holdMs);
    }
    await idleDone;
    if (!this.stopping) {
      const note = await this.fence(other);
      this.mark('abort', 'grader', `${other.transactionalId} (other team's topic): ${note}`);
    }
  }

  private async hang(t: Tracked, holdMs: number | null): Promise<void> {
    const { hangSeconds, reportWithinSeconds } = this.spec;
    const n = this.incidents.length + 1;
    const incident: Incident = Object.assign(t, { n, qualifiesAtMs: 0, deadlineMs: 0, lagAtQualify: null as number | null });
    const id = incident.transactionalId;
    try {
      await this.open(incident, [incident.partition]);
    } catch (err) {
      incident.problem = `the grader could not open it (${describeError(err)})`;
    }
    incident.openedAtMs ??= this.elapsed();
    incident.qualifiesAtMs = incident.openedAtMs + hangSeconds * 1000;
    incident.deadlineMs = incident.qualifiesAtMs + reportWithinSeconds * 1000;
    this.incidents.push(incident);
    this.tracked.push(incident);
    const record: FaultRecord = {
      atMs: incident.openedAtMs,
      kind: 'hanging-transaction',
      instance: 'grader',
      inTransaction: true,
      note: `${id} sent a record to WATCH_TOPIC partition ${incident.partition} (offset ${incident.offset ?? '?'}) and never commits; an alert is due ${hangSeconds} to ${hangSeconds + reportWithinSeconds} s after the coordinator started it`,
    };
    this.faults.push(record);
    this.options.listener.fault(record);
    this.mark('fault', 'grader', `hanging-transaction ${id} on partition ${incident.partition}`);
    this.sink.system(`fault ${n}${this.options.mode === 'run' ? '' : `/${this.incidentsPlanned}`}: hanging-transaction — ${record.note}`);
    if (incident.problem) return;

    if (holdMs === null) {
      // Grade: wait for an alert that names it (or the deadline), plus a moment for anything else.
      while (!this.stopping) {
        this.settleDueTimes(incident);
        if (this.elapsed() >= incident.deadlineMs) break;
        if (this.alerts.some((a) => a.atMs >= incident.qualifiesAtMs - 1_000 && namesId(a, id))) break;
        await sleep(100);
      }
      await this.pause(500);
    } else {
      await this.pause(holdMs);
    }
    this.settleDueTimes(incident);
    if (incident.lagAtQualify === null) incident.lagAtQualify = incident.maxLag;
    const note = await this.fence(incident);
    this.mark('abort', 'grader', `${id}: ${note}`);
    this.sink.system(`grader: ${id} ${note} (blocked lag had reached ${incident.maxLag})`);
  }

  /**
   * A hanging transaction is due HANG_SECONDS after the coordinator started it. The grader's own
   * clock (just before its send) is the fallback; the coordinator's start time, once its log shows
   * the transaction Ongoing, is what the monitor sees, so it wins (a send on a busy machine takes
   * a while).
   */
  private settleDueTimes(incident: Incident): void {
    const started = this.coordinator.get(incident.transactionalId)?.find((s) => s.state === 'Ongoing')?.startMs;
    const base = Math.max(incident.openedAtMs ?? 0, started ?? 0);
    incident.qualifiesAtMs = base + this.spec.hangSeconds * 1000;
    incident.deadlineMs = incident.qualifiesAtMs + this.spec.reportWithinSeconds * 1000;
  }

  // ---- progress and shutdown -------------------------------------------------------------------

  private emitProgress(): void {
    const reported = this.incidents.filter((i) => this.alerts.some((a) => namesId(a, i.transactionalId))).length;
    this.options.listener.progress({
      mode: this.options.mode,
      phase: this.phase,
      processed: reported,
      expected: this.incidentsPlanned || this.incidents.length,
      elapsedMs: this.elapsed(),
      limitMs: this.limitMs,
      faultsDone: this.incidents.length,
      faultsPlanned: this.incidentsPlanned || this.incidents.length,
    });
  }

  private emitState(): void {
    const m = this.monitor;
    this.options.listener.state({
      activity: this.stopping || this.phase === 'done' ? 'idle' : this.options.mode === 'run' ? 'running' : 'grading',
      lab: this.lab.id,
      instances: m ? [{ id: m.instance.id, state: m.instance.state, incarnation: m.incarnation }] : [],
      topics: this.topicEnv(),
    });
  }

  private mark(kind: TimelineEvent['kind'], instance: string, detail?: string): void {
    this.timeline.push({ atMs: this.elapsed(), kind, instance, ...(detail ? { detail } : {}) });
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    if (this.progressTimer) clearInterval(this.progressTimer);
    if (this.sampler) clearInterval(this.sampler);
    await this.monitor?.instance.stop(2_000);
    this.workload.stop = true;
    await Promise.all(this.workload.loops.splice(0));
    // Whatever is still open (a Run stopped mid-cycle): abort it with its own producer, quickly.
    await Promise.all(this.tracked.filter((t) => t.txn && t.endedAtMs === null).map((t) => t.txn!.abort().then(() => (t.endedAtMs = this.elapsed())).catch(() => {})));
    await this.graderConsumer?.disconnect().catch(() => {});
    await Promise.all(this.producers.map((p) => p.disconnect().catch(() => {})));
    await this.probe?.close();
    fs.rmSync(this.workDir, { recursive: true, force: true });
    this.phase = 'done';
    this.emitState();
  }

  // ---- manual faults (Run mode) ----------------------------------------------------------------

  async manualFault(kind: ManualFault, instanceId?: string): Promise<void> {
    const m = this.monitor;
    if (instanceId && instanceId !== 'i1') throw new KafkaIqError('INVALID_INPUT', `No instance ${instanceId}: a monitor runs as i1 only.`);
    const record = (k: FaultRecord['kind'], instance: string, note: string) => {
      const r: FaultRecord = { atMs: this.elapsed(), kind: k, instance, inTransaction: null, note };
      this.faults.push(r);
      this.mark('fault', instance, k);
      this.options.listener.fault(r);
      this.sink.system(`fault: ${k} ${instance} — ${note}`);
    };
    switch (kind) {
      case 'kill':
        if (!m) throw new KafkaIqError('INVALID_INPUT', 'The monitor is not running.');
        record('kill', 'i1', 'killed by you (SIGKILL); restarting it');
        this.expectedExits.add(m.instance);
        await m.instance.kill();
        this.startMonitor();
        return;
      case 'pause':
        if (!m) throw new KafkaIqError('INVALID_INPUT', 'The monitor is not running.');
        record('pause', 'i1', 'paused by you (SIGSTOP): a frozen monitor raises no alerts');
        m.instance.pause();
        this.emitState();
        return;
      case 'resume':
        if (!m) throw new KafkaIqError('INVALID_INPUT', 'The monitor is not running.');
        m.instance.resume();
        this.sink.system('i1 resumed (SIGCONT)');
        this.emitState();
        return;
      case 'add-instance':
        throw new KafkaIqError('INVALID_INPUT', 'A monitor runs as one instance: there is nothing to add.');
      case 'broker-restart':
        if (!this.options.control) throw new KafkaIqError('INVALID_INPUT', 'This server uses an external cluster (KAFKA_BROKERS): it cannot restart the broker.');
        record('broker-restart', 'broker', 'restarted by you');
        await maintenanceFor(this.options.brokers).withExclusive(() => this.options.control!.restart());
        this.sink.system('broker is back');
        return;
    }
  }
}
