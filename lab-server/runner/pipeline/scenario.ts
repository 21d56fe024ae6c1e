/**
 * The pipeline scenario (kind 'pipeline'): seeded input in waves, the program's instances under
 * the supervisor, one planned fault per wave through the nemesis, then the output verified as a
 * read_committed consumer sees it. Performance labs time a throughput burst first (throughput.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { PipelineLab } from '../../../src/shared/lab.ts';
import type { CrashPoint, FaultRecord } from '../../../src/shared/report.ts';
import { describeError, KafkaIqError } from '../../../src/shared/errors.ts';
import type { ApiNamespace } from '../../api/lab-api.ts';
import { findTransactionCoordinator, waitForFullIsr } from '../../kafka/coordinator.ts';
import { removeGroupMember } from '../../kafka/group-offsets.ts';
import { waitForStableGroup } from '../../kafka/group-wait.ts';
import { listTransactions } from '../../kafka/transactions.ts';
import type { TransactionTimeoutWatch } from '../checkers/transaction-timeouts.ts';
import type { AttemptDatabase } from '../database-attempt.ts';
import type { Slot, Supervisor } from '../program/supervisor.ts';
import { DEFAULTS_ENV } from '../program/child/protocol.ts';
import { brokerSeesOpenTransaction } from '../../kafka/open-transaction.ts';
import type { ManualFault } from '../contract.ts';
import type { AimedHit, ProgramDriver } from '../driver/contract.ts';
import { untilDeadline } from '../driver/until-deadline.ts';
import { planFaults, type FaultPlan, type PlannedFault } from '../fault-plan.ts';
import type { AttemptLifecycle, Outcome, ProgressFigures, Scenario } from '../lifecycle.ts';
import type { NemesisContext } from '../nemesis/context.ts';
import { insideUnitOfWork } from '../nemesis/api-faults.ts';
import { manualFault } from '../nemesis/manual.ts';
import type { ProgramProcess } from '../program/program-instance.ts';
import { InputWriter, planSeedTransactions, type SeedTransaction } from '../seeder.ts';
import type { AbandonedTransactions } from './abandoned-transactions.ts';
import { FaultObligations } from './fault-obligations.ts';
import { PipelineLiveness } from './liveness.ts';
import type { StallWatch } from './stall-watch.ts';
import { collectPipeline } from './collect.ts';
import { playPipeline } from './play.ts';
import type { PipelineParts } from './parts.ts';
import { pipelineSupervisor, preparePipeline } from './prepare.ts';
import { PipelineProgress } from './progress.ts';
import type { ThroughputResult } from './throughput.ts';

export class PipelineScenario implements Scenario, NemesisContext, PipelineParts {
  readonly progressEveryMs = 300;
  readonly lab: PipelineLab;
  readonly writer: InputWriter;
  readonly progressTracker: PipelineProgress;
  readonly supervisor: Supervisor;
  /** Labs with an `api` block: this attempt's namespace of the lab HTTP API (lab-server/api). */
  api: ApiNamespace | null = null;
  /** Labs with a `database` block: the attempt's own database (DATABASE_URL). */
  database: AttemptDatabase | null = null;
  /** Labs with the check no-transaction-timeouts: where __transaction_state ended at the start. */
  txnTimeouts: TransactionTimeoutWatch | null = null;
  throughput: ThroughputResult | null = null;
  timedOut = false;
  faultsDone = 0;
  /** Transactions live instances held open at the end of the work (instrumented programs). */
  heldAtEnd: string[] = [];
  /** What stopped instances left open, once the broker had its chance to resolve it. */
  abandoned: AbandonedTransactions | null = null;
  /** Every crash point some incarnation of the program reached (a 'call' or 'hit' event). */
  readonly reachedPoints = new Set<CrashPoint>();
  readonly obligations = new FaultObligations(this.reachedPoints, (line) => this.system(line));
  readonly stallWatch: StallWatch;
  /** Holds, stalls and transactions held at the end (pipeline-liveness.ts). */
  readonly liveness: PipelineLiveness;
  faultPlan: FaultPlan | null = null;
  /** Committed input records the grade writes in all (set when the plan starts). */
  expected = 0;
  /** The next input wave (set when the plan splits the input). */
  takeWave: () => SeedTransaction[] = () => [];

  constructor(
    readonly attempt: AttemptLifecycle,
    lab: PipelineLab,
  ) {
    this.lab = lab;
    this.writer = new InputWriter(attempt.kafka, `${attempt.namespace}-seeder`, (t) => attempt.realTopic(t), (fn) => attempt.maintenance.continueShared(fn));
    this.progressTracker = new PipelineProgress({
      kafka: attempt.kafka,
      brokers: attempt.options.brokers,
      lab: this.lab,
      groupId: attempt.groupId,
      realTopic: (t) => attempt.realTopic(t),
      written: () => this.writer.written,
      database: () => this.database,
      watchStages: () => attempt.options.mode !== 'run' && (attempt.phase === 'running' || attempt.phase === 'settling'),
      moved: () => this.supervisor.resetRestartCounts(),
      transactionOpen: () => this.liveness.liveTransactionOpen(),
    });
    this.supervisor = pipelineSupervisor(this);
    this.liveness = new PipelineLiveness(this);
    this.stallWatch = this.liveness.stallWatch;
  }

  // ---- NemesisContext (what the fault handlers and the driver see) -----------------------------

  /** The attempt's driver, with no fault firing past the time limit (until-deadline.ts). */
  get driver() {
    return (this.driverUntilDeadline ??= untilDeadline(this.attempt.driver, () => this.attempt.deadline));
  }
  private driverUntilDeadline?: ProgramDriver;

  wrapped(): boolean {
    return this.attempt.driver.kind === 'instrumented';
  }

  get brokers() {
    return this.attempt.options.brokers;
  }
  get control() {
    return this.attempt.options.control;
  }
  get maintenance() {
    return this.attempt.maintenance;
  }
  readonly cluster = {
    findTransactionCoordinator: (transactionalId: string) => findTransactionCoordinator(this.brokers, transactionalId),
    waitForFullIsr: (timeoutMs: number) => waitForFullIsr(this.brokers, timeoutMs),
  };
  get stopping() {
    return this.attempt.stopping;
  }
  get slots(): Iterable<Slot> {
    return this.supervisor.slots.values();
  }
  get processed() {
    return this.progressTracker.processed;
  }
  get committedWritten() {
    return this.writer.written.filter((r) => r.committed).length;
  }
  get nextSlot() {
    return this.supervisor.nextSlot;
  }
  slot(n: number) {
    return this.supervisor.slot(n);
  }
  startSlot(n: number): Slot {
    return this.supervisor.start(n);
  }
  expectExit(instance: ProgramProcess) {
    this.supervisor.expectExit(instance);
  }
  addZombie(instance: ProgramProcess) {
    this.supervisor.zombies.add(instance);
  }
  removeZombie(instance: ProgramProcess) {
    this.supervisor.zombies.delete(instance);
  }
  hasMemberships(instance: ProgramProcess) {
    return this.supervisor.members.has(instance);
  }
  freshProcessed() {
    return this.progressTracker.fresh();
  }
  nextWave() {
    return this.takeWave();
  }
  realTopic(logical: string) {
    return this.attempt.realTopic(logical);
  }
  system(line: string) {
    this.attempt.sink.system(line);
  }
  emitState() {
    this.attempt.emitState();
  }

  async writeWave(wave: SeedTransaction[]): Promise<void> {
    if (!wave.length) return;
    await this.maintenance.withShared(() => this.writer.write(wave));
    this.attempt.history.mark('wave', 'grader', `${wave.reduce((n, t) => n + t.records.length, 0)} records`);
  }

  /** Was a transaction open? The broker knows (LSO < HWM on a topic the program writes). */
  brokerSaysTransactionOpen(): Promise<boolean | null> {
    return brokerSeesOpenTransaction(this.progressTracker.probe, this.lab.topics.filter((t) => t.role !== 'input').map((t) => this.realTopic(t.name)));
  }

  async earliestTransactionExpiry(): Promise<number | null> {
    try {
      const open = (await listTransactions(this.brokers, this.attempt.namespace)).filter((t) => t.state === 'Ongoing' && t.startedAt && t.timeoutMs);
      return open.length ? Math.min(...open.map((t) => Date.parse(t.startedAt!) + t.timeoutMs!)) : null;
    } catch (err) {
      this.system(`could not ask the broker when the open transactions expire (${describeError(err)})`);
      return null;
    }
  }

  /**
   * After a kill fault: takes the dead instance's consumers out of their groups (LeaveGroup on its
   * behalf). A SIGKILLed consumer sends no LeaveGroup, so its replacement's join would wait for
   * the dead member's session timeout (3 s per kill) before the group rebalances. What is graded
   * (fencing, aborted transactions, the replay from committed offsets) is the same either way; the
   * zombie fault, where the session timeout is the point, never gets this. Best effort: a member
   * the group already dropped is just gone.
   */
  async removeFromGroups(instance: ProgramProcess): Promise<void> {
    const groups = this.supervisor.members.get(instance);
    if (!groups) return;
    // Not waiting for a slow answer: at most 3 s, then the session timeout does it.
    const leave = Promise.all([...groups].map(([groupId, memberId]) => removeGroupMember(this.brokers, groupId, memberId).catch(() => {})));
    await Promise.race([leave, sleep(3_000)]);
  }

  async awaitStableGroup(members: number, timeoutMs: number): Promise<void> {
    // false (not in time) or null (the broker is restarting): the fault goes on regardless.
    await waitForStableGroup(this.attempt.kafka, this.attempt.groupId, () => members, timeoutMs);
  }

  recordFault(
    fault: Pick<PlannedFault, 'kind'> & Partial<Pick<PlannedFault, 'points' | 'attempt'>>,
    instance: string,
    event: (Pick<AimedHit, 'point' | 'txnOpen'> & { aimedAt?: string; unconfirmed?: boolean }) | null,
    txnOpen: boolean | null,
    note?: string,
  ): FaultRecord {
    // Only our wrapper can hold a program at a point: an opaque program's faults are not aimed.
    const aimedAt = this.attempt.driver.kind === 'instrumented' && fault.points?.length ? [...fault.points] : null;
    const landed = aimedAt ? (event?.point && aimedAt.includes(event.point) ? 'at-point' : 'fallback') : undefined;
    // A crash point aimed at one stage: say which, so the learner can place the evidence.
    const aimed = event?.aimedAt ? `in the transaction writing ${this.lab.topics.find((t) => t.name === event.aimedAt)?.env ?? event.aimedAt}` : undefined;
    if (aimed) note = note ? `${aimed}; ${note}` : aimed;
    this.liveness.faultEnded(fault.kind);
    if (event?.unconfirmed) {
      const unconfirmed = 'the program reported an open transaction, but the broker showed none (LSO = high watermark): not counted as inside one';
      note = note ? `${note}; ${unconfirmed}` : unconfirmed;
    }
    const record: FaultRecord = {
      atMs: this.attempt.elapsed(),
      kind: fault.kind,
      instance,
      ...(event?.point ? { crashPoint: event.point } : {}),
      // A crash point in an HTTP or SQL call lies inside the program's unit of work (nemesis/api-faults.ts).
      inTransaction: event ? event.txnOpen || insideUnitOfWork(event.point) : txnOpen,
      ...(aimedAt ? { aimedAt, landed } : {}),
      ...(fault.attempt && fault.attempt > 1 ? { try: fault.attempt } : {}),
      ...(note ? { note } : {}),
    };
    const n = this.attempt.history.fault(record);
    const landing = landed === 'fallback' ? ` (fell back; aimed at ${aimedAt!.join(' or ')})` : landed === 'at-point' ? ' (hit its point)' : '';
    this.attempt.history.mark('fault', instance, `${fault.kind}${record.crashPoint ? ` at ${record.crashPoint}` : ''}${landing}${record.try ? `, try ${record.try}` : ''}`);
    this.attempt.options.listener.fault(record);
    this.system(
      `fault ${n}/${this.faultPlan?.faults.length ?? 0}: ${fault.kind} ${instance}${record.crashPoint ? ` at ${record.crashPoint}` : ''}${record.inTransaction ? ' (inside an open transaction)' : ''}` +
        (landed === 'fallback' ? ` — fell back: aimed at ${aimedAt!.join(' or ')}, which the program did not reach in time` : '') +
        (record.try ? ` (try ${record.try})` : '') +
        `${note ? ` — ${note}` : ''}`,
    );
    return record;
  }

  /** A program instance's env; another namespace (the throughput measurement) moves topics, group and ids there. */
  env(slot: number, namespace = this.attempt.namespace): Record<string, string> {
    return {
      KAFKA_BROKERS: this.brokers.join(','),
      ...Object.fromEntries(this.lab.topics.map((t) => [t.env, `${namespace}-${t.name}`])),
      GROUP_ID: `${namespace}-group`,
      TRANSACTIONAL_ID: `${namespace}-tx-${slot}`,
      // Shared by every instance: for one transactional.id per input partition (see the zombie lab).
      TRANSACTIONAL_ID_PREFIX: `${namespace}-tx`,
      INSTANCE_ID: `i${slot}`,
      ...(this.database ? { DATABASE_URL: this.database.url } : {}),
      KAFKAJS_NO_PARTITIONER_WARNING: '1',
      ...this.attempt.tenancyEnv(),
      [DEFAULTS_ENV]: JSON.stringify(this.lab.kafkajs),
      ...(this.api && this.lab.api ? { [this.lab.api.env]: this.api.baseUrl } : {}),
    };
  }

  // ---- Scenario --------------------------------------------------------------------------------

  plan(seed: number): void {
    this.faultPlan = planFaults(this.attempt.options.mode === 'quick' ? this.lab.faults.quick : this.lab.faults.full, seed, { joinsLast: this.lab.instances === 1 });
  }

  async pollProgress(): Promise<void> {
    const { phase } = this.attempt;
    if (phase !== 'compiling' && phase !== 'done') await this.progressTracker.poll();
    if (this.attempt.options.mode !== 'run' && (phase === 'running' || phase === 'settling') && !this.attempt.stopping) this.stallWatch.poll();
    this.attempt.emitProgress();
  }

  progress(): ProgressFigures {
    return {
      processed: this.progressTracker.processed,
      expected: this.expected || this.committedWritten,
      faultsDone: this.faultsDone,
      faultsPlanned: this.faultPlan?.faults.length ?? 0,
    };
  }

  prepare(): Promise<void> {
    return preparePipeline(this);
  }

  async playFree(): Promise<void> {
    const { attempt } = this;
    // Start the program first and seed while it boots and joins its group: the learner sees
    // output sooner (the seed takes about as long as a Node start and a group join).
    for (let i = 1; i <= this.lab.instances; i++) this.startSlot(i);
    attempt.phase = 'running';
    await this.maintenance.withShared(() => this.writer.write(planSeedTransactions(this.lab)));
    attempt.history.mark('wave', 'grader', 'all input written');
    await Promise.race([attempt.stopSignal, sleep(attempt.limitMs, undefined, { ref: false })]);
    if (attempt.elapsed() >= attempt.limitMs) this.system(`Run stopped after its limit of ${Math.round(attempt.limitMs / 60_000)} min.`);
  }

  play(): Promise<void> {
    return playPipeline(this);
  }

  collect(): Promise<Outcome> {
    return collectPipeline(this);
  }

  stats(outcome: Outcome | null) {
    return {
      inputs: this.committedWritten,
      abortedInputs: this.writer.written.filter((r) => !r.committed).length,
      outputs: outcome?.outputs ?? 0,
      abortedRecords: outcome?.abortedRecords ?? 0,
      ...(this.attempt.options.mode === 'run' ? {} : { longestStallMs: this.stallWatch.longestMs }),
      ...(this.abandoned?.blockedMs ? { outputBlockedMs: this.abandoned.blockedMs } : {}),
    };
  }

  topics(): string[] {
    return this.lab.topics.map((t) => this.realTopic(t.name));
  }

  manualFault(kind: ManualFault, instanceId?: string): Promise<void> {
    const supervisor = this.supervisor;
    return manualFault(
      {
        supervisor,
        control: this.control,
        maintenance: this.maintenance,
        target: (k, id) => {
          const slot = id ? [...supervisor.slots.values()].find((s) => s.current.id === id) : supervisor.first;
          if (!slot && k !== 'broker-restart' && k !== 'add-instance') {
            throw new KafkaIqError('INVALID_INPUT', `No instance ${id}: running are ${[...supervisor.slots.values()].map((s) => s.current.id).join(', ')}.`);
          }
          return slot;
        },
        record: (k, instance, note, slot) => void this.recordFault({ kind: k } satisfies Pick<PlannedFault, 'kind'>, instance, null, slot?.txnOpen ?? null, note),
        startSlot: (n) => this.startSlot(n),
        system: (line) => this.system(line),
        emitState: () => this.emitState(),
        words: { kill: 'killed by you (SIGKILL); restarting with the same identity', pause: { kind: 'zombie', note: 'paused by you (SIGSTOP)' }, noAddInstance: null },
      },
      kind,
      instanceId,
    );
  }

  async shutdown(): Promise<void> {
    await Promise.all(this.supervisor.live().map((i) => i.stop(2_000)));
    await this.database?.release().catch((err) => this.system(`the attempt's database could not be given back: ${describeError(err)}`));
    await this.writer.disconnect();
    await this.progressTracker.close();
    this.api?.close();
  }
}
