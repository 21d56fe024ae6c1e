import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, Kafka } from 'kafkajs';
import { REPORT_VERSION, type CrashPoint, type FaultRecord, type GradeReport, type TimelineEvent, type Verdict } from '../../src/shared/report.ts';
import type { BrokerControl } from '../broker/cluster.ts';
import { describeError, KafkaIqError } from '../core/errors.ts';
import { ROOT_DIR } from '../core/paths.ts';
import { retry } from '../core/retry.ts';
import { createKafka } from '../kafka/client.ts';
import { findTransactionCoordinator, TRANSACTION_STATE_TOPIC, waitForFullIsr } from '../kafka/coordinator.ts';
import { fetchCommittedOffsets, removeGroupMember } from '../kafka/group-offsets.ts';
import { maintenanceFor, type MaintenanceLock } from '../broker/maintenance.ts';
import { OffsetsProbe, type PartitionOffsets } from '../kafka/inspect.ts';
import type { LoadedLab } from '../labs/load-lab.ts';
import type { ArmAction, ChildEvent } from './child/protocol.ts';
import { DEFAULTS_ENV } from './child/protocol.ts';
import { compileProgram } from './compile.ts';
import { AttemptDatabase } from './database-attempt.ts';
import type { DatabasePool } from '../db/pool.ts';
import type { ManualFault, SessionListener } from './contract.ts';
import { planFaults, randomSeed, type FaultPlan, type PlannedFault } from './fault-plan.ts';
import { OutputSink } from './output-sink.ts';
import { ProgramInstance, type ProgramSource } from './program-instance.ts';
import { InputWriter, planSeedTransactions, splitIntoWaves, type SeedTransaction } from './seeder.ts';
import { measureThroughput } from './throughput.ts';
import { verifyRun } from './verify.ts';
import { labApi, type ApiNamespace } from '../api/lab-api.ts';
import { injectApiFault, insideUnitOfWork, isApiFault } from '../api/api-faults.ts';
import { apiEffectChecks } from '../api/verify-effects.ts';
import { TransactionTimeoutWatch } from './transaction-timeouts.ts';

export type AttemptMode = 'run' | 'grade' | 'quick';
export type ProgramInput = { kind: 'code'; code: string } | { kind: 'command'; command: string };

export interface AttemptOptions {
  lab: LoadedLab;
  program: ProgramInput;
  brokers: string[];
  control: BrokerControl | null;
  /** Prefix of every topic, group and transactional id of this attempt. */
  namespace: string;
  mode: AttemptMode;
  seed?: number;
  listener: SessionListener;
  /** How long a Run may go on before it is stopped for the learner. */
  runLimitMs?: number;
  /** Where a database lab's attempt gets its database: the process's pool (DATABASE_URL) unless given. */
  databases?: DatabasePool;
}

interface Slot {
  slot: number;
  current: ProgramInstance;
  incarnation: number;
  txnOpen: boolean;
  restartsInARow: number;
}

/** A crash point the program reached; aimedAt: the logical topic the fault was aimed at (FaultSpec.topic). */
type AimedHit = ChildEvent & { t: 'hit'; aimedAt?: string };

const MAX_SELF_RESTARTS = 15;
const HIT_TIMEOUT_MS = 5_000;
/** How long a program that handled the new wave may sit idle, outside a transaction, before its crash point counts as unreachable. */
const IDLE_GIVE_UP_MS = 1_500;
const QUIET_MS = 6_000;
/**
 * How long the grader waits before starting a killed coordinator's broker again. The node is down
 * for longer than that (a broker JVM takes several seconds to start), and the controller moves its
 * leaderships after broker.session.timeout.ms (3 s) or when the restarted node registers again.
 */
const COORDINATOR_DOWN_MS = 2_000;
const STOP_GRACE_MS = 8_000;
/** Multi-stage labs: how long the later stages' topics must stay unchanged before verifying. */
const PIPELINE_QUIET_MS = 1_000;

/**
 * One run or grade of a learner program: a fresh namespace, seeded input, the program's
 * instances under a supervisor, the fault plan, and (for grades) the verification.
 */
export class LabAttempt {
  readonly namespace: string;
  readonly groupId: string;
  private readonly kafka: Kafka;
  /** Serialises broker faults with the grader's own Kafka work, per cluster. */
  private readonly maintenance: MaintenanceLock;
  private readonly lab: LoadedLab;
  private readonly sink: OutputSink;
  private readonly workDir: string;
  private readonly slots = new Map<number, Slot>();
  private readonly zombies = new Set<ProgramInstance>();
  private readonly faults: FaultRecord[] = [];
  private readonly timeline: TimelineEvent[] = [];
  private readonly writer: InputWriter;
  private source: ProgramSource | null = null;
  private startedAt = Date.now();
  /** The cluster's downtime total when this grade started (see MaintenanceLock.downtimeMs). */
  private downtimeAtStart = 0;
  private restarts = 0;
  private selfExits = 0;
  private stopping = false;
  private stopRequested: () => void = () => {};
  private readonly stopSignal = new Promise<void>((resolve) => (this.stopRequested = resolve));
  private processed = 0;
  private expected = 0;
  private phase: 'compiling' | 'preparing' | 'running' | 'settling' | 'verifying' | 'done' = 'compiling';
  private faultsDone = 0;
  private faultsPlanned = 0;
  private progressTimer: NodeJS.Timeout | null = null;
  private nextWave: () => SeedTransaction[] = () => [];
  private probe: OffsetsProbe | null = null;
  private lastActivityAt = Date.now();
  /** Labs with an `api` block: this attempt's namespace of the lab HTTP API (lab-server/api). */
  private api: ApiNamespace | null = null;
  /** Labs with a `database` block: the attempt's own database (DATABASE_URL). */
  private database: AttemptDatabase | null = null;
  /** How long preparing waited for the database alone; the time limit starts after it. */
  private databaseWaitMs = 0;
  /** Labs with the check no-transaction-timeouts: where __transaction_state ended at the start. */
  private txnTimeouts: TransactionTimeoutWatch | null = null;

  constructor(private readonly options: AttemptOptions) {
    this.lab = options.lab;
    this.namespace = options.namespace;
    this.groupId = `${options.namespace}-group`;
    this.kafka = createKafka(options.brokers, `kafkaiq-grader-${options.namespace}`);
    this.maintenance = maintenanceFor(options.brokers);
    this.workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-'));
    this.sink = new OutputSink((instance, stream, line) => options.listener.output(instance, stream, line), this.workDir);
    this.writer = new InputWriter(this.kafka, `${options.namespace}-seeder`, (t) => this.realTopic(t), (fn) => this.maintenance.continueShared(fn));
  }

  realTopic(logical: string): string {
    return `${this.namespace}-${logical}`;
  }

  /** Env name -> real topic, for the learner's display. */
  topicEnv(): Record<string, string> {
    return Object.fromEntries(this.lab.definition.topics.map((t) => [t.env, this.realTopic(t.name)]));
  }

  /**
   * The grade's time limit, moved back by the time the cluster was down for maintenance meanwhile
   * and by the wait for the lab's database.
   */
  private get deadline(): number {
    return this.startedAt + this.databaseWaitMs + this.limitMs + (this.maintenance.downtimeMs - this.downtimeAtStart);
  }

  private get limitMs(): number {
    const { mode } = this.options;
    if (mode === 'run') return this.options.runLimitMs ?? 10 * 60_000;
    const limit = mode === 'quick' ? this.lab.definition.quickTimeLimitMs : this.lab.definition.timeLimitMs;
    // A --cmd program (a JVM, say) restarts in seconds after every fault, and Kafka's copier also
    // exits whenever it reaches the end it saw at launch: it gets twice the lab's limit.
    return this.options.program.kind === 'command' ? 2 * limit : limit;
  }

  private elapsed(): number {
    return Date.now() - this.startedAt;
  }

  /** Ends a Run (or cuts a grade short); safe to call at any time. */
  requestStop(): void {
    this.stopRequested();
  }

  // ---- the two modes -------------------------------------------------------------------------

  async run(): Promise<void> {
    try {
      await this.prepare();
      // Start the program first and seed while it boots and joins its group: the learner sees
      // output sooner (the seed takes about as long as a Node start and a group join).
      for (let i = 1; i <= this.lab.definition.instances; i++) this.startSlot(i);
      this.phase = 'running';
      await this.maintenance.withShared(() => this.writer.write(planSeedTransactions(this.lab.definition)));
      this.mark('wave', 'grader', 'all input written');
      await Promise.race([this.stopSignal, sleep(this.limitMs, undefined, { ref: false })]);
      if (this.elapsed() >= this.limitMs) this.sink.system(`Run stopped after its limit of ${Math.round(this.limitMs / 60_000)} min.`);
    } finally {
      await this.shutdown();
    }
  }

  async grade(): Promise<GradeReport> {
    const seed = this.options.seed ?? randomSeed();
    const plan = planFaults(this.options.mode === 'quick' ? this.lab.definition.faults.quick : this.lab.definition.faults.full, seed);
    this.faultsPlanned = plan.faults.length;
    const startedAtIso = new Date().toISOString();
    let report: GradeReport;
    try {
      report = await this.gradeWithPlan(plan, startedAtIso);
    } catch (err) {
      const infrastructure = !(err instanceof KafkaIqError) || err.isInfrastructure;
      const compile = err instanceof KafkaIqError && err.code === 'COMPILE_FAILED';
      report = this.report(plan.seed, startedAtIso, compile ? 'fail' : 'error', compile ? `Your program does not compile: ${describeError(err)}` : `The grader could not finish (${describeError(err)}); this is not your program's fault, try again.`, [], { outputs: 0, abortedRecords: 0 });
      if (!infrastructure && !compile) report.message = describeError(err);
    } finally {
      await this.shutdown();
    }
    return report;
  }

  private async gradeWithPlan(plan: FaultPlan, startedAtIso: string): Promise<GradeReport> {
    await this.prepare();
    // Performance labs: time a baseline and the learner's program on bursts of their own topics
    // first, before any fault, so the timing is clean and the lab's topics stay untouched.
    const throughput = this.lab.definition.throughput
      ? await measureThroughput({
          lab: this.lab,
          kafka: this.kafka,
          brokers: this.options.brokers,
          namespace: this.namespace,
          learner: this.source!,
          env: (namespace) => this.env(1, namespace),
          workDir: this.workDir,
          system: (line) => this.sink.system(line),
          output: (instance, stream, line) => this.sink.line(instance, stream, line),
        })
      : null;
    const transactions = planSeedTransactions(this.lab.definition);
    // One wave per fault, a spare per fault for the "after a send" fallback, one for the zombie's
    // replacement to chew on, and a last one. A fault must never find the input used up.
    // Several instances also get a warm-up wave (see below).
    const multi = this.lab.definition.instances > 1;
    const waves = splitIntoWaves(transactions, 2 * plan.faults.length + 1 + plan.faults.filter((f) => f.kind === 'zombie').length + (multi ? 1 : 0));
    this.nextWave = () => waves.shift() ?? [];
    this.expected = transactions.filter((t) => t.commit).reduce((n, t) => n + t.records.length, 0);
    this.sink.system(
      `Grading ${this.lab.id} (${this.options.mode === 'quick' ? 'quick' : 'full'}), seed ${plan.seed}: ${plan.faults.length} faults, ${this.expected} committed input records in ${waves.length} waves, limit ${Math.round(this.limitMs / 1000)} s.`,
    );
    for (let i = 1; i <= this.lab.definition.instances; i++) this.startSlot(i);
    this.phase = 'running';
    this.downtimeAtStart = this.maintenance.downtimeMs;
    let timedOut = false;

    if (multi) {
      // Several instances join one by one (each join is a rebalance), and a program's first batch
      // of a partition may do extra work (a producer per partition, fencing). Let the group form
      // and process a first wave, so the first fault's crash point is reached as quickly as later ones.
      await this.waitForStableGroup(Math.min(12_000, this.deadline - Date.now()));
      await this.writeWave(this.nextWave());
      await this.waitForProgress(Math.min(15_000, this.deadline - Date.now()));
    }
    for (const fault of plan.faults) {
      if (Date.now() > this.deadline) break;
      // Several instances: every start, exit and join is a rebalance. Arm the next fault once the
      // group is stable again, so the instance it targets owns partitions when the wave arrives.
      if (multi) await this.waitForStableGroup(Math.min(12_000, this.deadline - Date.now()));
      await this.injectFault(fault, this.nextWave());
      this.faultsDone++;
      await this.waitForProgress(Math.min(15_000, this.deadline - Date.now()));
    }
    for (const wave of waves) await this.writeWave(wave);

    this.phase = 'settling';
    timedOut = !(await this.settle());
    if (timedOut) this.sink.system(`Time limit of ${Math.round(this.limitMs / 1000)} s reached with ${this.processed}/${this.expected} inputs processed: verifying what is there.`);
    await this.stopAll();

    this.phase = 'verifying';
    this.emitProgress();
    this.sink.system(`All instances stopped at +${(this.elapsed() / 1000).toFixed(1)} s; verifying the output as a read_committed consumer would see it.`);
    // Labs with a database: the effects, counted in the database itself.
    const effects = this.database ? await this.database.verify(this.lab.definition, this.writer.written) : null;
    // no-transaction-timeouts: the coordinator's log since the start (transaction-timeouts.ts).
    const timeoutCheck = this.txnTimeouts ? await this.maintenance.withShared(() => this.txnTimeouts!.check(this.faults, this.startedAt)) : null;
    const verification = await this.maintenance.withShared(() => verifyRun({
      kafka: this.kafka,
      brokers: this.options.brokers,
      lab: this.lab.definition,
      groupId: this.groupId,
      realTopic: (t) => this.realTopic(t),
      inputs: this.writer.written,
      faults: this.faults,
      startedAt: this.startedAt,
      extraChecks: [
        ...(throughput ? [throughput.check] : []),
        ...(timeoutCheck ? [timeoutCheck] : []),
        // Labs that call the lab API: the effects it applied, against what the committed inputs ask for.
        ...(this.api && this.lab.definition.api
          ? apiEffectChecks({ api: this.lab.definition.api, effects: this.api.effects, inputs: this.writer.written, faults: this.faults, startedAt: this.startedAt })
          : []),
        // Labs with a database: the rows the program left, against what the committed inputs ask for.
        ...(effects?.checks ?? []),
      ],
    }));
    if (effects) verification.outputs += effects.rows;
    const failed = verification.checks.filter((c) => !c.passed);
    // Our wrapper tells us exactly when a fault hit an open transaction. A --cmd program has no
    // wrapper; there the broker's evidence counts: records of aborted transactions in the output,
    // which a program that never aborts on its own (e.g. Kafka's copier) only leaves when a fault
    // cut a transaction short.
    const hitTransaction =
      this.faults.some((f) => f.inTransaction === true) || (this.source?.kind === 'command' && verification.abortedRecords > 0);
    let verdict: Verdict;
    let message: string;
    if (verification.checks.length === 0) {
      verdict = 'error';
      message = 'No checks ran, so nothing was proven: the lab must name at least one check.';
    } else if (failed.length) {
      verdict = 'fail';
      message = `${failed.length} of ${verification.checks.length} checks failed: ${failed.map((c) => c.name).join(', ')}.${timedOut ? ' The time limit was reached before all input was processed.' : ''}`;
    } else if (!hitTransaction) {
      verdict = 'inconclusive';
      message = `All checks held, but no fault landed inside an open transaction, so exactly-once was not really tested: grade again (another seed).`;
    } else {
      verdict = 'pass';
      message = `All ${verification.checks.length} checks held under ${this.faults.length} faults (${this.faults.filter((f) => f.inTransaction).length} inside open transactions).`;
    }
    return this.report(plan.seed, startedAtIso, verdict, message, verification.checks, verification);
  }

  private report(
    seed: number,
    startedAt: string,
    verdict: Verdict,
    message: string,
    checks: GradeReport['checks'],
    counts: { outputs: number; abortedRecords: number },
  ): GradeReport {
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
        inputs: this.writer.written.filter((r) => r.committed).length,
        abortedInputs: this.writer.written.filter((r) => !r.committed).length,
        outputs: counts.outputs,
        abortedRecords: counts.abortedRecords,
        restarts: this.restarts,
        selfExits: this.selfExits,
        durationMs: this.elapsed(),
      },
    };
  }

  /** Deletes this attempt's topics (the session keeps the latest attempt's for inspection). */
  async deleteTopics(): Promise<void> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      await admin.deleteTopics({ topics: this.lab.definition.topics.map((t) => this.realTopic(t.name)), timeout: 10_000 });
    } catch {
      // Already gone, or the broker is down: nothing a learner can act on.
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  // ---- preparation -----------------------------------------------------------------------------

  private async prepare(): Promise<void> {
    this.startedAt = Date.now();
    this.phase = 'compiling';
    this.progressTimer = setInterval(() => void this.pollProgress(), 300);
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
    if (this.lab.definition.api) this.api = (await labApi()).open(this.namespace);
    // The lab's database (if any) is prepared while the topics are created.
    const spec = this.lab.definition.database;
    const opening = spec ? AttemptDatabase.open(spec, this.namespace, (line) => this.sink.system(line), this.options.databases) : null;
    let databaseError: unknown = null;
    try {
      // Replication factor 3 needs every node: one killed by a fault may still be coming back
      // (started by this process, or by another on the same cluster).
      await this.maintenance.whenWhole();
      await this.waitForAllBrokers();
      await this.maintenance.withShared(() => this.createTopics());
      if (this.options.mode !== 'run' && this.lab.definition.checks.includes('no-transaction-timeouts')) {
        this.txnTimeouts = await TransactionTimeoutWatch.start(this.kafka, this.namespace);
      }
      await this.writer.connect();
    } finally {
      // Always wait for it, so shutdown() gives back a database that arrives after a failure.
      const waitFrom = Date.now();
      if (opening) this.database = await opening.catch((err) => ((databaseError = err), null));
      // Starting an embedded database (or waiting for a free one) is not the program's time.
      this.databaseWaitMs = Date.now() - waitFrom;
    }
    if (databaseError) throw databaseError;
  }

  private async waitForAllBrokers(): Promise<void> {
    const control = this.options.control;
    if (!control) return;
    const want = (await control.nodeIds()).length;
    if (want < 2) return;
    const admin = this.kafka.admin();
    const deadline = Date.now() + 180_000;
    try {
      await admin.connect();
      while (Date.now() < deadline) {
        const { brokers } = await admin.describeCluster().catch(() => ({ brokers: [] as unknown[] }));
        if (brokers.length >= want) return;
        await sleep(500);
      }
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  private async createTopics(): Promise<void> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      // Right after a broker restart the metadata can lag for a moment: retry, then give up clearly.
      await retry(
        () =>
          admin.createTopics({
            waitForLeaders: true,
            topics: this.lab.definition.topics.map((t) => ({
              topic: this.realTopic(t.name),
              numPartitions: t.partitions,
              ...(t.config ? { configEntries: Object.entries(t.config).map(([name, value]) => ({ name, value })) } : {}),
            })),
          }),
        { retries: 6, minDelayMs: 250, maxDelayMs: 2_000, shouldRetry: (err) => !/already exists/i.test(describeError(err)) },
      );
    } catch (err) {
      throw new KafkaIqError('BROKER_UNREACHABLE', `Kafka did not accept the lab topics (${describeError(err)}): is the broker running? Start it with 'npm run broker'.`, { cause: err });
    } finally {
      await admin.disconnect();
    }
  }

  /** A program instance's env; another namespace (the throughput measurement) moves topics, group and ids there. */
  private env(slot: number, namespace = this.namespace): Record<string, string> {
    return {
      KAFKA_BROKERS: this.options.brokers.join(','),
      ...Object.fromEntries(this.lab.definition.topics.map((t) => [t.env, `${namespace}-${t.name}`])),
      GROUP_ID: `${namespace}-group`,
      TRANSACTIONAL_ID: `${namespace}-tx-${slot}`,
      // Shared by every instance: for one transactional.id per input partition (see the zombie lab).
      TRANSACTIONAL_ID_PREFIX: `${namespace}-tx`,
      INSTANCE_ID: `i${slot}`,
      ...(this.database ? { DATABASE_URL: this.database.url } : {}),
      KAFKAJS_NO_PARTITIONER_WARNING: '1',
      [DEFAULTS_ENV]: JSON.stringify(this.lab.definition.kafkajs),
      ...(this.api && this.lab.definition.api ? { [this.lab.definition.api.env]: this.api.baseUrl } : {}),
    };
  }

  // ---- instances -------------------------------------------------------------------------------

  private startSlot(slotNumber: number): Slot {
    const previous = this.slots.get(slotNumber);
    // One live incarnation per slot (a zombie aside): an earlier one still running here (it exited
    // and was restarted by the supervisor path while a fault was armed on it, say) would be a second
    // copy with the same identity that no fault targets and nobody stops. Kafka's copier, which
    // exits whenever it reaches its launch-time end, hit this and raced copies of itself.
    const stale = previous?.current;
    if (stale?.alive && !this.zombies.has(stale)) {
      this.expectedExits.add(stale);
      stale.signal('SIGKILL');
    }
    const incarnation = (previous?.incarnation ?? 0) + 1;
    const instance = new ProgramInstance(`i${slotNumber}`, incarnation, this.source!, this.env(slotNumber));
    const slot: Slot = { slot: slotNumber, current: instance, incarnation, txnOpen: false, restartsInARow: previous?.restartsInARow ?? 0 };
    this.slots.set(slotNumber, slot);
    if (previous) this.restarts++;
    this.lastActivityAt = Date.now();
    this.mark('start', instance.id, incarnation > 1 ? `incarnation ${incarnation}` : undefined);
    instance.on('line', (stream, line) => this.sink.line(instance.id, stream, line));
    instance.on('event', (event) => this.onChildEvent(slot, instance, event));
    instance.on('exit', (code, signal) => this.onExit(slot, instance, code, signal));
    this.emitState();
    return slot;
  }

  private onChildEvent(slot: Slot, instance: ProgramInstance, event: ChildEvent): void {
    if (event.t === 'member') {
      const groups = this.members.get(instance) ?? new Map<string, string>();
      groups.set(event.groupId, event.memberId);
      this.members.set(instance, groups);
      return;
    }
    if (instance === slot.current) slot.txnOpen = event.txnOpen;
    // A commit is work getting done even when the group's offsets have not moved yet (a slow
    // machine, retries after a broker restart): it keeps the settle phase from giving up early.
    if (event.t === 'call' && (event.point === 'after:commit' || event.point === 'after:db-commit') && this.phase === 'settling') this.lastActivityAt = Date.now();
    if (event.t === 'call' && event.point === 'after:commit') this.mark('commit', instance.id);
    if (event.t === 'call' && event.point === 'after:db-commit') this.mark('commit', instance.id, 'database');
    if (event.t === 'call' && event.point === 'after:abort') this.mark('abort', instance.id);
    if (event.t === 'failed' && (event.op === 'commit' || event.op === 'sendOffsets')) this.mark('abort', instance.id, `${event.op} failed: ${event.error}`);
  }

  private expectedExits = new WeakSet<ProgramInstance>();
  /** The consumer-group memberships each instance last reported (group id -> member id). */
  private readonly members = new WeakMap<ProgramInstance, Map<string, string>>();

  /**
   * After a kill fault: takes the dead instance's consumers out of their groups (LeaveGroup on its
   * behalf). A SIGKILLed consumer sends no LeaveGroup, so its replacement's join would wait for
   * the dead member's session timeout (3 s per kill) before the group rebalances. What is graded
   * (fencing, aborted transactions, the replay from committed offsets) is the same either way; the
   * zombie fault, where the session timeout is the point, never gets this. Best effort: a member
   * the group already dropped is just gone.
   */
  private async removeFromGroups(instance: ProgramInstance): Promise<void> {
    const groups = this.members.get(instance);
    if (!groups) return;
    // Not waiting for a slow answer: at most 3 s, then the session timeout does it.
    const leave = Promise.all([...groups].map(([groupId, memberId]) => removeGroupMember(this.options.brokers, groupId, memberId).catch(() => {})));
    await Promise.race([leave, sleep(3_000)]);
  }

  private onExit(slot: Slot, instance: ProgramInstance, code: number | null, signal: NodeJS.Signals | null): void {
    this.mark('exit', instance.id, signal ? `signal ${signal}` : `code ${code}`);
    this.emitState();
    if (this.stopping || this.expectedExits.has(instance) || this.zombies.has(instance) || slot.current !== instance) return;
    // A program that exits on its own is restarted, as a supervisor (systemd, Kubernetes) would.
    this.selfExits++;
    // A clean exit (code 0) is a program that finished its input, e.g. Kafka's copier: not a crash loop.
    if (code !== 0 || signal) slot.restartsInARow++;
    const reason = signal === 'SIGXCPU' ? 'its CPU-time limit' : signal ? `signal ${signal}` : `code ${code}`;
    if (slot.restartsInARow > MAX_SELF_RESTARTS) {
      this.sink.system(`${instance.id} exited (${reason}) ${MAX_SELF_RESTARTS} times in a row; no more restarts.`);
      return;
    }
    const delay = Math.min(2_000, 250 * Math.max(1, slot.restartsInARow));
    this.sink.system(`${instance.id} exited on its own (${reason}); restarting it in ${(delay / 1000).toFixed(1)} s, like a supervisor would.`);
    setTimeout(() => {
      // Slot records are replaced on every start: compare with the slot's current record, or a
      // fault that restarted the slot meanwhile would get a second, untracked incarnation.
      if (!this.stopping && this.slots.get(slot.slot)?.current === instance) this.startSlot(slot.slot);
    }, delay).unref();
  }

  private liveInstances(): ProgramInstance[] {
    return [...[...this.slots.values()].map((s) => s.current), ...this.zombies].filter((i) => i.alive);
  }

  private async stopAll(): Promise<void> {
    this.stopping = true;
    // A generous grace: a program finishing its last transaction on a busy machine must not be
    // SIGKILLed mid-transaction by us, or the hanging transaction would be blamed on it.
    await Promise.all(this.liveInstances().map((i) => i.stop(STOP_GRACE_MS)));
    this.emitState();
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    if (this.progressTimer) clearInterval(this.progressTimer);
    await this.progressAdmin?.disconnect().catch(() => {});
    this.progressAdmin = null;
    await Promise.all(this.liveInstances().map((i) => i.stop(2_000)));
    await this.database?.release().catch((err) => this.sink.system(`the attempt's database could not be given back: ${describeError(err)}`));
    await this.writer.disconnect();
    await this.probe?.close();
    this.api?.close();
    fs.rmSync(this.workDir, { recursive: true, force: true });
    this.phase = 'done';
    this.emitState();
  }

  // ---- faults ----------------------------------------------------------------------------------

  private async writeWave(wave: SeedTransaction[]): Promise<void> {
    if (!wave.length) return;
    await this.maintenance.withShared(() => this.writer.write(wave));
    this.mark('wave', 'grader', `${wave.reduce((n, t) => n + t.records.length, 0)} records`);
  }

  /** Arms the crash point (if any), writes the next wave, and waits for the program to reach it. */
  /** Arms a crash point and resolves with the hit, or null if the program did not reach it in time. */
  private armAt(
    instance: ProgramInstance,
    point: CrashPoint,
    action: ArmAction,
    occurrence: number,
    topic?: string,
    waveWrittenAt: () => number = () => Infinity,
  ): Promise<(ChildEvent & { t: 'hit' }) | null> {
    const hit = new Promise<(ChildEvent & { t: 'hit' }) | null>((resolve) => {
      // A program that worked on the new wave and then went idle outside a transaction will not
      // reach the point (a program without transactions never commits one): stop waiting after
      // IDLE_GIVE_UP_MS instead of the whole HIT_TIMEOUT_MS. Not for a point aimed at a later
      // stage, whose input arrives only when an earlier stage commits.
      let lastCallAt = 0;
      let txnOpen = false;
      const onEvent = (event: ChildEvent) => {
        if (event.t === 'member') return;
        txnOpen = event.txnOpen;
        if (event.t === 'call' || event.t === 'failed') lastCallAt = Date.now();
        if (event.t !== 'hit') return;
        cleanup();
        resolve(event);
      };
      const idleCheck = topic
        ? undefined
        : setInterval(() => {
            if (txnOpen || lastCallAt <= waveWrittenAt() || Date.now() - lastCallAt < IDLE_GIVE_UP_MS) return;
            cleanup();
            instance.send({ t: 'disarm' });
            resolve(null);
          }, 200);
      const onExit = () => {
        cleanup();
        resolve(null);
      };
      // A crash point aimed at a later stage waits for the wave to pass the earlier ones first.
      const timer = setTimeout(
        () => {
          cleanup();
          instance.send({ t: 'disarm' });
          resolve(null);
        },
        topic ? 2 * HIT_TIMEOUT_MS : HIT_TIMEOUT_MS,
      );
      const cleanup = () => {
        clearTimeout(timer);
        clearInterval(idleCheck);
        instance.off('event', onEvent);
        instance.off('exit', onExit);
      };
      instance.on('event', onEvent);
      instance.once('exit', onExit);
    });
    instance.send({ t: 'arm', point, action, occurrence, ...(topic ? { topic: this.realTopic(topic) } : {}) });
    return hit;
  }

  /** Arms the crash point (if any), writes the next wave, and waits for the program to reach it. */
  private async armAndWrite(slot: Slot, fault: PlannedFault, action: ArmAction, wave: SeedTransaction[]) {
    const instance = slot.current;
    if (!fault.crashPoint || this.source?.kind !== 'bundle') {
      await this.writeWave(wave);
      // Without our wrapper (a --cmd program) the broker tells us when a transaction is open. A
      // program may have finished the wave before we looked (Kafka's copier copies 20 records in
      // well under a second), or still be starting (a JVM): then fresh input gives it another.
      // (Only for a program seen in a transaction before, or at the first fault while it boots: a
      // program without transactions, a console pipe say, would just wait out the timeout.)
      if (this.source?.kind === 'command') {
        if (!(await this.waitForOpenTransaction(3_000)) && (this.transactionsSeen || this.faultsDone === 0)) {
          const spare = this.nextWave();
          if (spare.length) await this.writeWave(spare);
          await this.waitForOpenTransaction(spare.length ? 8_000 : 2_000);
        }
      } else await sleep(fault.delayMs);
      return { instance, event: null };
    }
    let waveWrittenAt = Infinity;
    const hit = this.armAt(instance, fault.crashPoint, action, fault.occurrence, fault.topic, () => waveWrittenAt);
    await this.writeWave(wave);
    waveWrittenAt = Date.now();
    let event: AimedHit | null = await hit;
    if (event && fault.topic) event = { ...event, aimedAt: fault.topic };
    // A program may never make the planned call (no transactions: no commit; no write to the
    // aimed-at topic). Every pipeline sends (a database lab's program writes rows), so fall back
    // to the moment right after any send (row write), with fresh input to reach it.
    const fallbackPoint: CrashPoint = this.lab.definition.database ? 'after:db-write' : 'after:send';
    if (!event && (fault.crashPoint !== fallbackPoint || fault.topic) && instance.alive) {
      const spare = this.nextWave();
      if (spare.length) {
        const fallback = this.armAt(instance, fallbackPoint, action, 1);
        await this.writeWave(spare);
        event = await fallback;
      }
    }
    if (!event) await sleep(fault.delayMs);
    return { instance, event };
  }

  private recordFault(fault: PlannedFault, instance: string, event: { point: PlannedFault['crashPoint']; txnOpen: boolean; aimedAt?: string } | null, txnOpen: boolean | null, note?: string): FaultRecord {
    // A crash point aimed at one stage: say which, so the learner can place the evidence.
    const aimed = event?.aimedAt ? `in the transaction writing ${this.lab.definition.topics.find((t) => t.name === event.aimedAt)?.env ?? event.aimedAt}` : undefined;
    if (aimed) note = note ? `${aimed}; ${note}` : aimed;
    const record: FaultRecord = {
      atMs: this.elapsed(),
      kind: fault.kind,
      instance,
      ...(event?.point ? { crashPoint: event.point } : {}),
      // A crash point in an HTTP or SQL call lies inside the program's unit of work (api-faults.ts).
      inTransaction: event ? event.txnOpen || insideUnitOfWork(event.point) : txnOpen,
      ...(note ? { note } : {}),
    };
    this.faults.push(record);
    this.mark('fault', instance, `${fault.kind}${record.crashPoint ? ` at ${record.crashPoint}` : ''}`);
    this.options.listener.fault(record);
    this.sink.system(
      `fault ${this.faults.length}/${this.faultsPlanned}: ${fault.kind} ${instance}${record.crashPoint ? ` at ${record.crashPoint}` : ''}${record.inTransaction ? ' (inside an open transaction)' : ''}${note ? ` — ${note}` : ''}`,
    );
    return record;
  }

  /** Whether a --cmd program was ever caught with a transaction open. */
  private transactionsSeen = false;

  /** Polls the output partitions until one has an open transaction (LSO < HWM), or the time is up. */
  private async waitForOpenTransaction(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (await this.brokerSaysTransactionOpen()) return (this.transactionsSeen = true);
      await sleep(2);
    }
    return false;
  }

  /** Whether the slot's program holds an open transaction: our wrapper says so, or for a --cmd program the broker does. */
  private async openTransactionNow(slot: Slot): Promise<boolean | null> {
    return this.source?.kind === 'command' ? await this.brokerSaysTransactionOpen() : slot.txnOpen;
  }

  /** For programs without our wrapper: was a transaction open? The broker knows (LSO < HWM). */
  private async brokerSaysTransactionOpen(): Promise<boolean | null> {
    try {
      this.probe ??= new OffsetsProbe(this.options.brokers);
      return await this.probe.transactionOpen(this.lab.definition.topics.filter((t) => t.role === 'output').map((t) => this.realTopic(t.name)));
    } catch {
      return null;
    }
  }

  private async injectFault(fault: PlannedFault, wave: SeedTransaction[]): Promise<void> {
    const slot = this.slots.get(fault.instance) ?? this.slots.get(1)!;
    switch (fault.kind) {
      case 'kill': {
        const { instance, event } = await this.armAndWrite(slot, fault, 'kill', wave);
        this.expectedExits.add(instance);
        instance.signal('SIGKILL');
        await instance.exited;
        const open = event ? null : await this.openTransactionNow(slot);
        // During a broker restart (another grade's) the group is re-formed anyway: no LeaveGroup
        // to hold up the replacement. When sent, the report says so, so the quick rejoin in the
        // timeline does not teach a wrong lesson.
        const leaves = this.members.has(instance) && !this.maintenance.isDown;
        this.recordFault(fault, instance.id, event, open, leaves ? 'the grader sends the LeaveGroup it could not: no wait for its session timeout' : undefined);
        if (leaves) await this.removeFromGroups(instance);
        this.startSlot(slot.slot);
        return;
      }
      case 'stop': {
        const { instance, event } = await this.armAndWrite(slot, fault, 'stop', wave);
        const open = event ? event.txnOpen : await this.openTransactionNow(slot);
        this.expectedExits.add(instance);
        this.recordFault(fault, instance.id, event, open);
        await instance.stop(5_000);
        this.startSlot(slot.slot);
        return;
      }
      case 'zombie': {
        const { instance, event } = await this.armAndWrite(slot, fault, 'pause', wave);
        instance.pause();
        this.zombies.add(instance);
        this.recordFault(fault, instance.id, event, event ? null : await this.openTransactionNow(slot), 'paused; a replacement with the same identity starts');
        const replacement = this.startSlot(slot.slot).current;
        // New input, so the replacement has work of its own while the zombie is frozen mid-transaction.
        await this.writeWave(this.nextWave());
        // Resume the zombie once the replacement has redone work: its first commit, or (for a
        // program without transactions) its first sends plus a moment.
        // When the zombie was frozen in one stage (an aimed crash point), wait for the replacement's
        // commit in that stage: only then has its producer fenced the zombie's, whose next call
        // then fails. (Another stage of a multi-stage program may commit long before.)
        const aimed = event?.aimedAt ? this.realTopic(event.aimedAt) : null;
        if (this.source?.kind === 'command') {
          // No IPC from a command: its commit shows as the group's offsets moving. Waking the
          // zombie before the replacement (a JVM takes seconds to start) has even fenced it would
          // test nothing, and would race two live instances instead.
          const committedBefore = await this.freshProcessed();
          const until = Date.now() + 30_000;
          while (Date.now() < until && this.processed <= committedBefore && replacement.alive) await sleep(200);
        }
        const sent = await this.waitForEvent(replacement, (e) => e.t === 'call' && (e.point === 'after:commit' || e.point === 'after:send'), 20_000);
        if (sent) {
          await this.waitForEvent(
            replacement,
            (e) => e.t === 'call' && e.point === 'after:commit' && (!aimed || (e.written ?? []).includes(aimed)),
            aimed ? 8_000 : 1_500,
          );
        }
        this.sink.system(`${instance.id} (the zombie) resumes`);
        instance.resume();
        const exited = await Promise.race([instance.exited.then(() => true), sleep(4_000, false)]);
        if (!exited) {
          this.sink.system(`${instance.id} (the zombie) kept running after it was fenced: stopping it.`);
          await instance.stop(2_000);
        }
        this.zombies.delete(instance);
        return;
      }
      case 'pause': {
        // Freeze the instance at the crash point (mid-transaction) and start NO replacement: the
        // group's session timeout expires and the other instances take over its partitions and
        // redo the frozen batch. Then it wakes up, still holding that transaction, as a rebalanced-
        // away zombie does in production. Only fencing through the transactional.id of the
        // partition can stop its commit (kafkajs's sendOffsets carries no group generation).
        const { instance, event } = await this.armAndWrite(slot, fault, 'pause', wave);
        instance.pause();
        this.emitState();
        this.recordFault(fault, instance.id, event, event ? null : slot.txnOpen, 'paused (SIGSTOP) past its session timeout, no replacement: the group hands its partitions to the other instances');
        await this.waitWhilePaused(instance);
        this.sink.system(`${instance.id} resumes (SIGCONT) and carries on where it froze; from here on it is a normal group member again`);
        instance.resume();
        this.emitState();
        // Let the held transaction play out (its commit goes through, or fails because it was
        // fenced) before the next fault is armed: a crash point armed now would catch the zombie's
        // own commit and hide what it does. A program without transactions is done at its next call.
        const settled = (e: ChildEvent) =>
          (e.t === 'call' && (e.point === 'after:commit' || e.point === 'after:abort' || !e.txnOpen)) || (e.t === 'failed' && e.op !== 'commitOffsets');
        await Promise.race([this.waitForEvent(instance, settled, 5_000), instance.exited]);
        return;
      }
      case 'join': {
        const next = Math.max(...this.slots.keys()) + 1;
        await this.writeWave(wave);
        await sleep(fault.delayMs);
        this.recordFault(fault, `i${next}`, null, [...this.slots.values()].some((s) => s.txnOpen), 'a new instance joins the group');
        this.startSlot(next);
        return;
      }
      case 'send-error': {
        const { instance, event } = await this.armAndWrite(slot, fault, 'error', wave);
        if (event) this.recordFault(fault, instance.id, event, null, 'the send failed as if the partition leader had moved');
        else this.recordFault(fault, instance.id, null, slot.txnOpen, 'not injected: the program made no send in time');
        return;
      }
      case 'broker-restart': {
        await this.writeWave(wave);
        await this.waitForEvent(slot.current, (e) => e.t === 'call' && e.point === 'after:send', 4_000);
        if (!this.options.control) {
          this.recordFault(fault, 'broker', null, null, 'skipped: this cluster is not one KafkaIQ started (KAFKA_BROKERS), so it is not restarted');
          return;
        }
        const open = this.source?.kind === 'command' ? await this.brokerSaysTransactionOpen() : [...this.slots.values()].some((s) => s.txnOpen);
        this.recordFault(fault, 'broker', null, open, 'every broker stops cleanly and starts again');
        const restartStarted = Date.now();
        await this.maintenance.withExclusive(async () => {
          await this.maintenance.whenWhole();
          await this.options.control!.restart();
        });
        this.sink.system(`broker is back after ${((Date.now() - restartStarted) / 1000).toFixed(1)} s`);
        return;
      }
      case 'coordinator-kill':
        return this.killCoordinator(slot, fault, wave);
      case 'api-slow':
      case 'api-error':
      case 'api-timeout':
        return this.injectApiFault(fault, wave);
    }
  }

  /** api-slow, api-error, api-timeout: armed on the lab API and hit by the program's next calls (api/api-faults.ts). */
  private async injectApiFault(fault: PlannedFault, wave: SeedTransaction[]): Promise<void> {
    const spec = this.lab.definition.api;
    if (!this.api || !spec || !isApiFault(fault.kind)) {
      await this.writeWave(wave);
      this.recordFault(fault, 'api', null, null, 'skipped: this lab has no API');
      return;
    }
    const { note } = await injectApiFault(this.api, spec, fault.kind, fault.occurrence, () => this.writeWave(wave));
    // No Kafka transaction need be open while the program calls the API (a good program calls it
    // before the transaction opens): unknown. Kills at before:http / after:http are what prove a
    // grade conclusive (see insideUnitOfWork).
    this.recordFault(fault, 'api', null, null, note);
  }

  /**
   * SIGKILL the broker that coordinates the instance's transactions while the program is held at
   * its crash point (a transaction open), let the program go on against the failover (the
   * coordinator moves to another replica of __transaction_state once the controller fences the
   * dead node), then start the node again. The whole window holds the cluster's maintenance lock
   * exclusively: other attempts on this cluster do not create topics or verify with a node down.
   */
  private async killCoordinator(slot: Slot, fault: PlannedFault, wave: SeedTransaction[]): Promise<void> {
    // A node killed by an earlier fault must be back first; wait before arming, so the program is
    // not held at its crash point (its transaction open) for the length of a broker start.
    await this.maintenance.whenWhole();
    const { instance, event } = await this.armAndWrite(slot, fault, 'pause', wave);
    const control = this.options.control;
    const open = event ? null : await this.openTransactionNow(slot);
    if (!control) {
      instance.resume();
      this.recordFault(fault, 'broker', event, open, 'skipped: the cluster is external (KAFKA_BROKERS), so no broker is killed');
      return;
    }
    const transactionalId = this.env(slot.slot).TRANSACTIONAL_ID!;
    await this.maintenance.withExclusive(async () => {
      let coordinator;
      try {
        // Another attempt on this cluster may have killed a node meanwhile.
        await this.maintenance.whenWhole();
        coordinator = await findTransactionCoordinator(this.options.brokers, transactionalId);
      } catch (err) {
        instance.resume();
        throw err;
      }
      const nodes = await control.nodeIds();
      if (nodes.length < 3) {
        instance.resume();
        this.recordFault(fault, 'broker', event, open, `skipped: the cluster has ${nodes.length} broker(s), and killing the coordinator needs 3`);
        return;
      }
      const where = coordinator.partition >= 0 ? ` (leader of ${TRANSACTION_STATE_TOPIC}-${coordinator.partition})` : '';
      this.recordFault(
        fault,
        `broker-${coordinator.nodeId}`,
        event,
        open,
        `SIGKILL of broker ${coordinator.nodeId}, the transaction coordinator of ${instance.id}${where}; it starts again ${COORDINATOR_DOWN_MS / 1000} s later`,
      );
      await control.killNode(coordinator.nodeId);
      // The program goes on at once: its next transactional call meets the dead coordinator.
      instance.resume();
      await sleep(COORDINATOR_DOWN_MS);
      // The node comes back in the background while the program works on with two brokers; the
      // next fault that needs all three (and topic creation, and verification) waits for it.
      const started = Date.now();
      const nodeId = coordinator.nodeId;
      this.maintenance.recover(
        (async () => {
          await control.startNode(nodeId);
          // Back in every ISR: the next node loss must still leave 2 in-sync replicas everywhere.
          const inSync = await waitForFullIsr(this.options.brokers, 30_000);
          if (!this.stopping) this.sink.system(`broker ${nodeId} is back${inSync ? ' and in sync' : ' (some replicas still catching up)'} after ${((Date.now() - started) / 1000).toFixed(1)} s`);
        })(),
      );
    });
  }

  /** Multi-instance labs: waits until the group is Stable with one member per running slot. */
  private async waitForStableGroup(timeoutMs: number): Promise<void> {
    const until = Date.now() + Math.max(0, timeoutMs);
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      while (Date.now() < until) {
        const wanted = [...this.slots.values()].filter((s) => s.current.alive).length;
        const { groups } = await admin.describeGroups([this.groupId]).catch(() => ({ groups: [] as { state: string; members: unknown[] }[] }));
        if (groups[0]?.state === 'Stable' && groups[0].members.length === wanted) return;
        await sleep(150);
      }
      this.sink.system(`the consumer group did not settle within ${(timeoutMs / 1000).toFixed(0)} s: injecting the next fault anyway`);
    } catch {
      // The broker may be restarting: inject the fault anyway.
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  /**
   * A 'pause' fault holds its instance frozen until the group has expired its session and the
   * other instances have committed every input written so far (the frozen batch included, so its
   * records have been redone elsewhere). Bounded, for a program that never gets there: a single
   * instance, or a session timeout longer than the grader can wait.
   */
  private async waitWhilePaused(frozen: ProgramInstance): Promise<void> {
    const session = Math.min(this.lab.definition.kafkajs.consumer.sessionTimeout ?? 30_000, 15_000);
    const target = this.writer.written.filter((r) => r.committed).length;
    const started = Date.now();
    // Nobody can take the partitions over before the session timeout: no need to look earlier.
    await sleep(session);
    while (frozen.alive && Date.now() - started < session + 12_000 && this.processed < target) await sleep(100);
    if (this.processed < target) {
      this.sink.system(`the other instances did not take over ${frozen.id}'s work within ${((Date.now() - started) / 1000).toFixed(1)} s (${this.processed}/${target} inputs committed)`);
    } else {
      this.sink.system(`the other instances took over ${frozen.id}'s partitions and committed every input so far (${((Date.now() - started) / 1000).toFixed(1)} s frozen)`);
    }
  }

  private waitForEvent(instance: ProgramInstance, match: (e: ChildEvent) => boolean, timeoutMs: number): Promise<boolean> {
    if (this.source?.kind !== 'bundle') return sleep(Math.min(timeoutMs, 1_500), true);
    return new Promise((resolve) => {
      const onEvent = (e: ChildEvent) => {
        if (!match(e)) return;
        done(true);
      };
      const timer = setTimeout(() => done(false), timeoutMs);
      const done = (value: boolean) => {
        clearTimeout(timer);
        instance.off('event', onEvent);
        resolve(value);
      };
      instance.on('event', onEvent);
    });
  }

  // ---- progress --------------------------------------------------------------------------------

  private polling = false;
  private progressPolls = 0;
  private progressAdmin: Admin | null = null;

  /**
   * `processed` as of now: waits for a poll that began after this call. A poll already in flight
   * may predate a commit the program has just made, and reading it would later make that commit
   * look like someone else's progress (a zombie's last commit taken for its replacement's first).
   */
  private async freshProcessed(timeoutMs = 5_000): Promise<number> {
    const target = this.progressPolls + 2;
    const until = Date.now() + timeoutMs;
    while (this.progressPolls < target && Date.now() < until) await sleep(50);
    return this.processed;
  }

  private async pollProgress(): Promise<void> {
    if (this.phase === 'compiling' || this.phase === 'done') return this.emitProgress();
    if (this.polling) return; // the previous poll is still waiting on the broker
    this.polling = true;
    try {
      // One admin client for the whole attempt: a fresh one every 300 ms cost a connection, an
      // ApiVersions and a metadata round trip per poll, on a broker CI shares with other grades.
      const admin = (this.progressAdmin ??= this.kafka.admin());
      await admin.connect();
      let processed = 0;
      for (const topic of this.lab.definition.topics.filter((t) => t.role === 'input')) {
        const [offsets] = await admin.fetchOffsets({ groupId: this.groupId, topics: [this.realTopic(topic.name)] });
        for (const p of offsets?.partitions ?? []) {
          const committedOffset = Number(p.offset);
          processed += this.writer.written.filter((r) => r.committed && r.topic === topic.name && r.partition === p.partition && r.offset < committedOffset).length;
        }
      }
      // A database lab's program may keep its offsets in the database: its rows count too.
      if (this.database) {
        const committed = this.writer.written.filter((r) => r.committed);
        processed = Math.max(processed, await this.database.appliedCount(committed).catch(() => 0));
      }
      if (processed !== this.processed) {
        this.lastActivityAt = Date.now();
        for (const slot of this.slots.values()) slot.restartsInARow = 0;
      }
      this.processed = processed;
      if (this.stagedPipeline && this.options.mode !== 'run' && (this.phase === 'running' || this.phase === 'settling')) await this.pollPipeline(admin);
    } catch {
      // The broker may be restarting (a fault): keep the last figure, and connect afresh next time.
      const broken = this.progressAdmin;
      this.progressAdmin = null;
      await broken?.disconnect().catch(() => {});
    } finally {
      this.polling = false;
      this.progressPolls++;
    }
    this.emitProgress();
  }

  // ---- multi-stage labs --------------------------------------------------------------------------
  // `processed` counts the input group's offsets: the first stage only. With internal topics the
  // later stages may still be working when it is complete, so settling also waits for them.

  private get stagedPipeline(): boolean {
    const { topics, database } = this.lab.definition;
    // A database lab with an output topic (the outbox relay) is a later stage too: the rows show
    // progress first, the events follow. Settling waits for the output to be quiet and committed.
    return topics.some((t) => t.role === 'internal') || (!!database && topics.some((t) => t.role === 'output'));
  }

  private readonly pipeline = { signature: '', changedAt: Date.now(), caughtUp: false, polls: 0 };

  /**
   * Reads the ends of the internal and output topics, and the offsets every consumer group of this
   * attempt (named after GROUP_ID) committed on the internal topics. Caught up: no transaction is
   * open, and on every internal topic some group consumes, the furthest committed offset of each
   * partition with data is at its end (end - 1: the last entry of a transactional write is its
   * commit marker, which no consumer commits past).
   */
  private async pollPipeline(admin: Admin): Promise<void> {
    this.probe ??= new OffsetsProbe(this.options.brokers);
    const topics = this.lab.definition.topics.filter((t) => t.role !== 'input');
    const ends = new Map<string, PartitionOffsets[]>();
    let caughtUp = true;
    for (const topic of topics) {
      const offsets = await this.probe.offsets(this.realTopic(topic.name));
      ends.set(topic.name, offsets);
      if (offsets.some((p) => p.lso < p.hwm)) caughtUp = false;
    }
    const signature = JSON.stringify([...ends].map(([name, offsets]) => [name, offsets.map((p) => p.hwm)]));
    if (signature !== this.pipeline.signature) {
      this.pipeline.signature = signature;
      this.pipeline.changedAt = Date.now();
      this.lastActivityAt = Date.now();
    }
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(this.groupId));
    for (const topic of topics.filter((t) => t.role === 'internal')) {
      const furthest = new Map<number, number>();
      for (const groupId of groups) {
        for (const p of await fetchCommittedOffsets(admin, groupId, this.realTopic(topic.name))) {
          if (p.offset >= 0) furthest.set(p.partition, Math.max(furthest.get(p.partition) ?? -1, p.offset));
        }
      }
      if (furthest.size === 0) continue; // no stage reads it through a group (a changelog, say)
      for (const p of ends.get(topic.name)!) if (p.hwm > 0 && (furthest.get(p.partition) ?? -1) < p.hwm - 1) caughtUp = false;
    }
    this.pipeline.caughtUp = caughtUp;
    this.pipeline.polls++;
  }

  /** True when every stage after the first has finished too (always true without internal topics). */
  private pipelineSettled(): boolean {
    return !this.stagedPipeline || (this.pipeline.caughtUp && Date.now() - this.pipeline.changedAt >= PIPELINE_QUIET_MS);
  }

  private emitProgress(): void {
    this.options.listener.progress({
      mode: this.options.mode,
      phase: this.phase,
      processed: this.processed,
      expected: this.expected || this.writer.written.filter((r) => r.committed).length,
      elapsedMs: this.elapsed(),
      limitMs: this.limitMs,
      faultsDone: this.faultsDone,
      faultsPlanned: this.faultsPlanned,
    });
  }

  /**
   * After a fault: wait until the program has caught up with all input written so far, so the next
   * fault is armed while it is idle and its crash-point count starts at a batch boundary.
   */
  private async waitForProgress(timeoutMs: number): Promise<void> {
    const target = this.writer.written.filter((r) => r.committed).length;
    const until = Date.now() + Math.max(0, timeoutMs);
    while (Date.now() < until && this.processed < target) await sleep(100);
    // Multi-stage: the later stages too (a retried batch of the last stage, say), so the next
    // fault does not cut short what the previous one set up. Judged by a poll that started after
    // the first stage was done; a pipeline that never catches up costs at most 5 s here.
    if (!this.stagedPipeline || this.processed < target) return;
    const after = this.pipeline.polls + 1;
    const stagesUntil = Math.min(until, Date.now() + 5_000);
    while (Date.now() < stagesUntil && !(this.pipeline.polls > after && this.pipeline.caughtUp)) await sleep(100);
  }

  /** Waits until every committed input is accounted for, or nothing moved for a while. True if all done. */
  private async settle(): Promise<boolean> {
    // A seeding transaction held open (a lab's holdOpen) blocks read_committed readers until it
    // ends: nothing can be judged complete, or quiet, before then.
    await this.writer.settled();
    this.lastActivityAt = Date.now();
    while (Date.now() < this.deadline) {
      if (this.processed >= this.expected && this.zombies.size === 0 && this.pipelineSettled()) return true;
      // A --cmd program (a JVM, say) restarts slowly after each fault: give it longer to show progress.
      // A later stage that has not caught up may be rejoining its group or restoring its state
      // after a restart (several seconds under load): give it longer too.
      const laterStagesBehind = this.stagedPipeline && this.processed >= this.expected && !this.pipeline.caughtUp;
      const quietMs = this.source?.kind === 'command' ? 3 * QUIET_MS : laterStagesBehind ? 2 * QUIET_MS : QUIET_MS;
      // A broker restart (this grade's or a parallel one's) is nobody's lack of progress.
      const quietSince = Math.max(this.lastActivityAt, this.maintenance.lastDowntimeEndedAt);
      if (!this.maintenance.isDown && Date.now() - quietSince > quietMs && this.processed > 0) {
        this.sink.system(`No progress for ${quietMs / 1000} s with ${this.processed}/${this.expected} inputs processed: verifying now.`);
        return true;
      }
      await sleep(200);
    }
    return false;
  }

  private mark(kind: TimelineEvent['kind'], instance: string, detail?: string): void {
    this.timeline.push({ atMs: this.elapsed(), kind, instance, ...(detail ? { detail } : {}) });
  }

  private emitState(): void {
    const instances = [...this.slots.values()].map((s) => ({ id: s.current.id, state: s.current.state, incarnation: s.incarnation }));
    for (const z of this.zombies) instances.push({ id: `${z.id}-zombie`, state: z.state, incarnation: z.incarnation });
    this.options.listener.state({
      activity: this.stopping || this.phase === 'done' ? 'idle' : this.options.mode === 'run' ? 'running' : 'grading',
      lab: this.lab.id,
      instances,
      topics: this.topicEnv(),
    });
  }

  // ---- manual faults (Run mode) ----------------------------------------------------------------

  async manualFault(kind: ManualFault, instanceId?: string): Promise<void> {
    const slot = instanceId ? [...this.slots.values()].find((s) => s.current.id === instanceId) : this.slots.get(1);
    if (!slot && kind !== 'broker-restart' && kind !== 'add-instance') throw new KafkaIqError('INVALID_INPUT', `No instance ${instanceId}: running are ${[...this.slots.values()].map((s) => s.current.id).join(', ')}.`);
    const fault = (k: FaultRecord['kind'], instance: string, note: string) => this.recordFault({ kind: k, instance: 1, occurrence: 1, delayMs: 0 }, instance, null, slot?.txnOpen ?? null, note);
    switch (kind) {
      case 'kill':
        fault('kill', slot!.current.id, 'killed by you (SIGKILL); restarting with the same identity');
        this.expectedExits.add(slot!.current);
        await slot!.current.kill();
        this.startSlot(slot!.slot);
        return;
      case 'pause':
        fault('zombie', slot!.current.id, 'paused by you (SIGSTOP)');
        slot!.current.pause();
        this.emitState();
        return;
      case 'resume':
        slot!.current.resume();
        this.sink.system(`${slot!.current.id} resumed (SIGCONT)`);
        this.emitState();
        return;
      case 'add-instance': {
        const next = Math.max(...this.slots.keys()) + 1;
        if (next > 6) throw new KafkaIqError('LIMIT_EXCEEDED', 'At most 6 instances run at once.');
        fault('join', `i${next}`, 'added by you: the group rebalances');
        this.startSlot(next);
        return;
      }
      case 'broker-restart':
        if (!this.options.control) throw new KafkaIqError('INVALID_INPUT', 'This server uses an external cluster (KAFKA_BROKERS): it cannot restart the broker.');
        fault('broker-restart', 'broker', 'restarted by you');
        await this.maintenance.withExclusive(async () => {
          await this.maintenance.whenWhole();
          await this.options.control!.restart();
        });
        this.sink.system('broker is back');
        return;
    }
  }
}
