/**
 * One attempt's lifecycle, the same for every lab kind: the work dir and output sink, compiling
 * the program, the stop signal, the time limit (moved back by broker downtime and waits that are
 * not the program's, longer for an opaque `--cmd` program), state and progress events, the grade's
 * error report and the report itself. What the attempt does in between (prepare, play, collect)
 * is its scenario's (pipeline/ or monitor/), chosen per lab kind in attempt.ts.
 */
import { PhaseClock } from './phase-clock.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kafka } from 'kafkajs';
import { REPORT_VERSION, type GradeReport, type Verdict } from '../../src/shared/report.ts';
import { maintenanceFor, type MaintenanceLock } from '../broker/maintenance.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { BROKER_LIB_DIR, ROOT_DIR } from '../core/paths.ts';
import { grantAttempt, type AttemptIdentity } from '../kafka/attempt-acls.ts';
import { graderPrefix, learnerNames, namespaceEnv, slotTransactionalId, type LearnerNames } from '../kafka/attempt-names.ts';
import { fenceAttempt } from '../kafka/fence.ts';
import { bestEffort } from '../core/best-effort.ts';
import { GroupEvictor } from '../kafka/group-evictor.ts';
import { createKafka } from '../kafka/client.ts';
import { writeClientProperties } from '../kafka/credentials.ts';
import { deleteTopics } from '../kafka/topics.ts';
import type { LoadedLab } from '../labs/load-lab.ts';
import { selectLabChecks } from './checkers/select.ts';
import { decideVerdict } from './checkers/verdict.ts';
import { compileProgram } from './program/compile.ts';
import type { ManualFault } from './contract.ts';
import { driverFor, type ProgramDriver } from './driver/index.ts';
import { randomSeed } from './fault-plan.ts';
import { attemptScope } from './attempt-scope.ts';
import { History } from './history.ts';
import { MAX_INSTANCES } from './nemesis/manual.ts';
import { createWorkDir } from './program/work-dirs.ts';
import { OutputSink } from './program/output-sink.ts';
import { sandboxPolicy } from './program/sandbox/policy.ts';
import type { ProgramSource } from './program/program-instance.ts';
import type { Attempt, AttemptOptions, AttemptPhase } from './types.ts';
import type { AttemptDatabase } from './database-attempt.ts';
import type { Outcome, Scenario } from './scenario.ts';

/**
 * Every JVM a command starts is a short-lived client, restarted at each kill: C1 alone and the
 * serial collector start it and run it on far less CPU than C2 and G1's threads (Kafka's copier,
 * quick plan, seeds 1-3: 13-16 core-seconds a grade for the whole machine instead of 16-20).
 */
const COMMAND_JVM_FLAGS = '-XX:TieredStopAtLevel=1 -XX:+UseSerialGC';

export class AttemptLifecycle implements Attempt {
  readonly namespace: string;
  readonly groupId: string;
  readonly lab: LoadedLab;
  readonly kafka: Kafka;
  /** Serialises broker faults with the grader's own Kafka work, per cluster. */
  readonly maintenance: MaintenanceLock;
  readonly workDir: string;
  readonly sink: OutputSink;
  readonly history: History;
  readonly scenario: Scenario;
  private currentPhase: AttemptPhase = 'compiling';
  /** Where this grade's time went (reported in its stats): the phases below, subdivided by the scenario. */
  readonly clock = new PhaseClock();
  get phase(): AttemptPhase {
    return this.currentPhase;
  }
  set phase(phase: AttemptPhase) {
    if (phase !== this.currentPhase || phase === 'compiling') {
      if (phase === 'done') this.clock.end();
      else this.clock.enter(phase);
    }
    this.currentPhase = phase;
  }
  startedAt = Date.now();
  /** Set when the attempt winds down: loops end, nothing restarts. */
  stopping = false;
  /**
   * Time that is not the program's: waits during preparing (a database start), and the stretch of
   * the plan's unannounced kill (play.ts). The deadline moves back by it.
   */
  notProgramTimeMs = 0;
  /** The cluster's downtime total when the plan started (see MaintenanceLock.downtimeMs). */
  downtimeAtStart = 0;
  private driverOf: ProgramDriver | null = null;
  /** The attempt's Kafka user and ACLs (granted after prepare, revoked at shutdown). */
  identity: AttemptIdentity | null = null;
  /** Exactly the topics, groups and transactional ids the program may use (its grants). */
  readonly names: LearnerNames;
  /** Prefix of the grader's own groups and transactional ids: outside every learner grant. */
  readonly graderId = graderPrefix();
  /** Sends the LeaveGroups a dead instance could not, for the attempt's own groups only, over one client. */
  readonly evictor: GroupEvictor;
  private progressTimer: NodeJS.Timeout | null = null;
  private stopRequested: () => void = () => {};
  readonly stopSignal = new Promise<void>((resolve) => (this.stopRequested = resolve));

  constructor(
    readonly options: AttemptOptions,
    scenario: (attempt: AttemptLifecycle) => Scenario,
  ) {
    this.lab = options.lab;
    this.namespace = options.namespace;
    this.groupId = `${options.namespace}-group`;
    this.kafka = createKafka(options.brokers, `kafkaiq-grader-${options.namespace}`);
    this.maintenance = maintenanceFor(options.brokers);
    this.workDir = createWorkDir();
    this.sink = new OutputSink((instance, stream, line) => options.listener.output(instance, stream, line), this.workDir);
    this.history = new History(() => this.elapsed());
    this.names = this.learnerNames();
    this.evictor = new GroupEvictor(options.brokers, (groupId) => this.ownsGroup(groupId), this.maintenance);
    this.scenario = scenario(this);
  }

  /** Whether a consumer group is one of the attempt's own (granted) groups. */
  ownsGroup(groupId: string): boolean {
    return this.names.groups.includes(groupId);
  }

  /**
   * The names the lab gives this attempt's program (kafka/attempt-names.ts): its namespace, and for
   * a throughput lab the two measurement namespaces under it; as many TRANSACTIONAL_ID slots as
   * instances can run (the lab's, plus the plan's joins; a Run may add instances up to MAX_INSTANCES).
   */
  private learnerNames(): LearnerNames {
    const { definition } = this.lab;
    const { mode } = this.options;
    const namespaces = [this.namespace, ...(definition.kind === 'pipeline' && definition.throughput ? [`${this.namespace}-base`, `${this.namespace}-speed`] : [])];
    const joins = (mode === 'quick' ? definition.faults.quick : definition.faults.full).filter((f) => f.kind === 'join').length;
    const slots = mode === 'run' ? MAX_INSTANCES : Math.min(MAX_INSTANCES, definition.instances + joins);
    return learnerNames(definition, namespaces, slots);
  }

  database(): AttemptDatabase | null {
    const database = this.scenario.database?.() ?? null;
    return database && !database.isReleased ? database : null;
  }

  realTopic(logical: string): string {
    return `${this.namespace}-${logical}`;
  }

  /** Env name -> real topic, for the learner's display. */
  topicEnv(): Record<string, string> {
    return Object.fromEntries(this.lab.definition.topics.map((t) => [t.env, this.realTopic(t.name)]));
  }

  /**
   * Env name -> this attempt's group and transactional ids, for the learner's display: the values
   * the scenarios give each instance (kafka/attempt-names.ts; TRANSACTIONAL_ID is per slot, one
   * value per instance), only those the lab's env lists.
   */
  idEnv(): Record<string, string> {
    const { GROUP_ID, TRANSACTIONAL_ID_PREFIX } = namespaceEnv(this.lab.definition, this.namespace);
    const slots = Array.from({ length: this.lab.definition.instances }, (_, i) => slotTransactionalId(this.namespace, i + 1));
    const ids: Record<string, string | undefined> = {
      GROUP_ID,
      TRANSACTIONAL_ID_PREFIX,
      TRANSACTIONAL_ID: slots.length === 1 ? slots[0] : slots.map((id, i) => `i${i + 1}: ${id}`).join(', '),
    };
    const listed = new Set(this.lab.definition.env.map((e) => e.name));
    return Object.fromEntries(Object.entries(ids).filter((entry): entry is [string, string] => listed.has(entry[0]) && entry[1] !== undefined));
  }

  /**
   * What every program process of this attempt gets to log in to Kafka as the attempt's user: the
   * documented KAFKA_SASL_* env (the kafkajs wrapper applies it), and for a JVM command a 0600
   * client properties file that ClientConfigAgent merges into every Kafka client (so Kafka's own
   * tools need no flag). Never the grader's credentials.
   */
  tenancyEnv(): Record<string, string> {
    if (!this.identity) throw new KafkaIqError('INTERNAL', 'a program is starting before its attempt has a Kafka identity');
    if (this.options.program.kind === 'code') return this.identity.env;
    const config = path.join(this.workDir, 'kafka-client.properties');
    if (!fs.existsSync(config)) writeClientProperties(config, this.identity.user, this.identity.env.KAFKA_SASL_PASSWORD);
    return { ...this.identity.env, KAFKA_CLIENT_CONFIG: config, JAVA_TOOL_OPTIONS: `${COMMAND_JVM_FLAGS} -javaagent:${path.join(BROKER_LIB_DIR, 'kafkaiq-launcher.jar')}=${config}` };
  }

  /** Grants the attempt exactly its names on the cluster (kafka/attempt-acls.ts). */
  private async grantIdentity(): Promise<void> {
    const { definition } = this.lab;
    // Like the grader's other Kafka work: not while a broker restart of another grade is under way,
    // nor while a node killed by one is still coming back (the ACL requests may go to any node).
    this.identity = await this.maintenance.withSharedWhole(() => grantAttempt(
      this.kafka,
      this.options.brokers,
      {
        namespace: this.namespace,
        ...this.names,
        // The monitor decodes the coordinator's log (kafkajs has no DescribeTransactions); see AUTHORING.
        extraReadTopics: definition.kind === 'monitor' ? ['__transaction_state'] : [],
        // Past any deadline this attempt can have (twice its limit, plus broker downtime slack).
        expiresAtMs: Date.now() + 2 * this.limitMs + 15 * 60_000,
      },
    ));
  }

  /** The compiled program's driver (instrumented, or opaque for `--cmd`); set once compiled. */
  get driver(): ProgramDriver {
    if (!this.driverOf) throw new KafkaIqError('INTERNAL', 'the program is not compiled yet');
    return this.driverOf;
  }

  get source(): ProgramSource {
    return this.driver.source;
  }

  elapsed(): number {
    return Date.now() - this.startedAt;
  }

  get limitMs(): number {
    const { mode } = this.options;
    if (mode === 'run') return this.options.runLimitMs ?? 10 * 60_000;
    const limit = mode === 'quick' ? this.lab.definition.quickTimeLimitMs : this.lab.definition.timeLimitMs;
    return (this.driverOf?.limitFactor ?? 1) * limit;
  }

  /**
   * The grade's time limit, moved back by the time the cluster was down for maintenance meanwhile
   * and by waits that were not the program's (the lab's database).
   */
  get deadline(): number {
    return this.startedAt + this.notProgramTimeMs + this.limitMs + (this.maintenance.downtimeMs - this.downtimeAtStart);
  }

  /** Ends a Run (or cuts a grade short); safe to call at any time. */
  requestStop(): void {
    this.stopRequested();
  }

  /** Sleeps, but wakes at once when the attempt is stopped. True if it slept the whole time. */
  async sleepUnlessStopped(ms: number): Promise<boolean> {
    if (this.stopping || ms <= 0) return !this.stopping;
    const stopped = await Promise.race([this.stopSignal.then(() => true), sleep(ms, false, { ref: false })]);
    if (stopped) this.stopping = true;
    return !stopped;
  }

  private crashedWith: (err: unknown) => void = () => {};
  /** Rejects when an error escaped from this attempt's work into the event loop (attempt-scope.ts). */
  private readonly crashed = new Promise<never>((_, reject) => (this.crashedWith = reject));

  /** Ends the attempt because of an error nobody caught: the grade ends with an `error` verdict. */
  fail(err: unknown): void {
    this.crashedWith(err);
    this.requestStop();
  }

  /** Runs the attempt's work in its scope, ended early by an escaped error. */
  private scoped(work: () => Promise<void>): Promise<void> {
    this.crashed.catch(() => {}); // observed through the race below
    return attemptScope.run(this, () => Promise.race([work(), this.crashed]));
  }

  async run(): Promise<void> {
    try {
      await this.scoped(async () => {
        await this.begin();
        await this.scenario.playFree();
      });
    } finally {
      await this.shutdown();
    }
  }

  async grade(): Promise<GradeReport> {
    const seed = this.options.seed ?? randomSeed();
    this.scenario.plan(seed);
    const startedAtIso = new Date().toISOString();
    let report: GradeReport | null = null;
    try {
      await this.scoped(async () => {
        await this.begin();
        const played = await this.scenario.play();
        this.phase = 'verifying';
        this.emitProgress();
        const outcome = await this.scenario.collect(played);
        const checks = [...selectLabChecks(this.lab.definition.checks, outcome.checks), ...(outcome.integrity ?? [])];
        const { verdict, message } = decideVerdict({ checks, ...outcome.verdict(checks) });
        report = this.report(seed, startedAtIso, verdict, message, checks, outcome);
      });
    } catch (err) {
      const infrastructure = !(err instanceof KafkaIqError) || err.isInfrastructure;
      const compile = err instanceof KafkaIqError && err.code === 'COMPILE_FAILED';
      // The learner sees one line; the operator needs where it came from to mend it.
      if (infrastructure && !compile) process.stderr.write(`[kafkaiq] ${this.namespace}: the grader could not finish (while ${this.phase}, +${(this.elapsed() / 1000).toFixed(1)} s): ${err instanceof Error ? err.stack : String(err)}\n`);
      report = this.report(
        seed,
        startedAtIso,
        compile ? 'fail' : 'error',
        compile ? `Your program does not compile: ${describeError(err)}` : `The grader could not finish (${describeError(err)}); this is not your program's fault, try again.`,
        [],
        null,
      );
      if (!infrastructure && !compile) report.message = describeError(err);
    } finally {
      await this.shutdown();
    }
    return report!;
  }

  manualFault(kind: ManualFault, instanceId?: string): Promise<void> {
    return this.scenario.manualFault(kind, instanceId);
  }

  /** Deletes this attempt's topics (the session keeps the latest attempt's for inspection). */
  deleteTopics(): Promise<void> {
    return deleteTopics(this.kafka, this.scenario.topics());
  }

  /** Compiles the program and lets the scenario prepare the cluster. */
  private async begin(): Promise<void> {
    this.startedAt = Date.now();
    this.phase = 'compiling';
    this.progressTimer = setInterval(() => void this.scenario.pollProgress(), this.scenario.progressEveryMs);
    this.emitProgress();
    const { program } = this.options;
    if (program.kind === 'code') {
      const compiled = await compileProgram(program.code, this.workDir);
      if (compiled.warnings.length) this.options.listener.diagnostics(compiled.warnings);
      this.driverOf = driverFor({ kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: this.workDir }, sandboxPolicy().sandboxed);
    } else {
      this.driverOf = driverFor({ kind: 'command', command: program.command, cwd: ROOT_DIR, writeDir: this.workDir }, sandboxPolicy().sandboxed);
    }
    this.phase = 'preparing';
    this.emitProgress();
    await this.scenario.prepare();
    await this.grantIdentity();
  }

  private report(seed: number, startedAt: string, verdict: Verdict, message: string, checks: GradeReport['checks'], outcome: Outcome | null): GradeReport {
    this.phase = 'done';
    this.emitProgress();
    // A seed the caller chose is a replay (same faults, same input): good for debugging, but its
    // outcome could be known in advance, so it never counts as passing the lab.
    const replay = this.options.seed !== undefined;
    return {
      version: REPORT_VERSION,
      lab: this.lab.id,
      verdict,
      message: replay ? `${message} (Replay of seed ${seed}: not counted toward passed labs.)` : message,
      seed,
      ...(replay ? { replay: true } : {}),
      quick: this.options.mode === 'quick',
      startedAt,
      checks,
      faults: [...this.history.faults],
      timeline: [...this.history.timeline],
      stats: {
        ...this.scenario.stats(outcome),
        restarts: this.scenario.supervisor?.restarts ?? 0,
        selfExits: this.scenario.supervisor?.selfExits ?? 0,
        durationMs: this.elapsed(),
        phases: this.clock.list(),
      },
    };
  }

  private async shutdown(): Promise<void> {
    this.stopping = true;
    if (this.progressTimer) clearInterval(this.progressTimer);
    // A step that fails here is logged and the next one still runs: the report is already made,
    // and what the attempt holds must be given back whatever happened.
    await bestEffort("stop the attempt's programs and give back its services", () => this.scenario.shutdown());
    await this.evictor.close();
    // Every program process is gone: end its transactions, then take the attempt's rights back.
    // The fence talks to Kafka like the grader's other work: not during another grade's restart.
    const identity = this.identity;
    if (identity) await bestEffort("fence the attempt's transactional ids", () => this.maintenance.withShared(() => fenceAttempt(this.options.brokers, this.namespace, this.names.transactionalIds)));
    await identity?.revoke();
    fs.rmSync(this.workDir, { recursive: true, force: true });
    this.phase = 'done';
    this.emitState();
  }

  emitProgress(): void {
    this.options.listener.progress({ mode: this.options.mode, phase: this.phase, ...this.scenario.progress(), elapsedMs: this.elapsed(), limitMs: this.limitMs });
  }

  emitState(): void {
    this.options.listener.state({
      activity: this.stopping || this.phase === 'done' ? 'idle' : this.options.mode === 'run' ? 'running' : 'grading',
      lab: this.lab.id,
      instances: this.scenario.supervisor?.instances() ?? [],
      topics: this.topicEnv(),
      ids: this.idEnv(),
    });
  }
}
