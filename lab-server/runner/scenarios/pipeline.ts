/**
 * The pipeline scenario (kind 'pipeline'): seeded input in waves, the program's instances under
 * the supervisor, one planned fault per wave through the nemesis, then the output verified as a
 * read_committed consumer sees it. Performance labs time a throughput burst first (throughput.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { PipelineLab } from '../../../src/shared/lab.ts';
import type { CrashPoint, FaultRecord } from '../../../src/shared/report.ts';
import { describeError, KafkaIqError } from '../../core/errors.ts';
import type { ApiNamespace } from '../../api/lab-api.ts';
import { findTransactionCoordinator, waitForFullIsr } from '../../kafka/coordinator.ts';
import { removeGroupMember } from '../../kafka/group-offsets.ts';
import { waitForStableGroup } from '../../kafka/group-wait.ts';
import { listTransactions } from '../../kafka/transactions.ts';
import type { TransactionTimeoutWatch } from '../checkers/transaction-timeouts.ts';
import type { AttemptDatabase } from '../database-attempt.ts';
import type { Slot, Supervisor } from '../supervisor.ts';
import { DEFAULTS_ENV } from '../child/protocol.ts';
import { brokerSeesOpenTransaction } from '../../kafka/open-transaction.ts';
import type { ManualFault } from '../contract.ts';
import type { AimedHit, ProgramDriver } from '../driver/contract.ts';
import { FaultPastTimeLimit, untilDeadline } from '../driver/until-deadline.ts';
import { planFaults, type FaultPlan, type PlannedFault } from '../fault-plan.ts';
import type { AttemptLifecycle, Outcome, ProgressFigures, Scenario } from '../lifecycle.ts';
import type { FaultOutcome, NemesisContext } from '../nemesis/context.ts';
import { insideUnitOfWork } from '../nemesis/api-faults.ts';
import { injectFault } from '../nemesis/index.ts';
import { livenessRestart } from '../nemesis/process-faults.ts';
import { manualFault } from '../nemesis/manual.ts';
import type { ProgramProcess } from '../program-instance.ts';
import { InputWriter, planSeedTransactions, splitIntoWaves, type SeedTransaction } from '../seeder.ts';
import { awaitAbandonedTransactions, type AbandonedTransactions } from './abandoned-transactions.ts';
import { FaultObligations } from './fault-obligations.ts';
import { PipelineLiveness, STALL_BOUND_MS } from './pipeline-liveness.ts';
import type { StallWatch } from './stall-watch.ts';
import { collectPipeline } from './pipeline-collect.ts';
import type { PipelineParts } from './pipeline-parts.ts';
import { pipelineSupervisor, preparePipeline } from './pipeline-prepare.ts';
import { PipelineProgress } from './pipeline-progress.ts';
import { measureThroughput, type ThroughputResult } from './throughput.ts';

const QUIET_MS = 6_000;
const STOP_GRACE_MS = 8_000;
/** How much longer than its limit a grade may settle while the program keeps up (see overtime). */
const OVERTIME_SHARE = 0.5;

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
  private readonly liveness: PipelineLiveness;
  private faultPlan: FaultPlan | null = null;
  private expected = 0;
  private takeWave: () => SeedTransaction[] = () => [];

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

  async play(): Promise<void> {
    const { attempt } = this;
    const plan = this.faultPlan!;
    // Performance labs: time a baseline and the learner's program on bursts of their own topics
    // first, before any fault, so the timing is clean and the lab's topics stay untouched.
    if (this.lab.throughput) {
      this.throughput = await measureThroughput({
        lab: { dir: attempt.lab.dir, definition: this.lab },
        kafka: attempt.kafka,
        brokers: this.brokers,
        namespace: attempt.namespace,
        learner: attempt.source,
        env: (namespace) => this.env(1, namespace),
        workDir: attempt.workDir,
        system: (line) => this.system(line),
        output: (instance, stream, line) => attempt.sink.line(instance, stream, line),
      });
    }
    // The input is drawn from the grade's seed too (seeder.ts): it cannot be known in advance.
    const transactions = planSeedTransactions(this.lab, this.faultPlan?.seed);
    // One wave per fault, a spare per fault for the "after a send" fallback, one for the zombie's
    // replacement to chew on, and a last one. A fault must never find the input used up.
    // Several instances also get a warm-up wave (see below).
    const multi = this.lab.instances > 1;
    // Owed faults (see obligations) are armed again with fresh input: two spare waves per aimed fault.
    const aimed = plan.faults.filter((f) => f.points?.length).length;
    const waves = splitIntoWaves(transactions, 2 * plan.faults.length + 1 + plan.faults.filter((f) => f.kind === 'zombie').length + (multi ? 1 : 0) + 2 * aimed);
    this.takeWave = () => waves.shift() ?? [];
    this.expected = transactions.filter((t) => t.commit).reduce((n, t) => n + t.records.length, 0);
    this.system(
      `Grading ${attempt.lab.id} (${attempt.options.mode === 'quick' ? 'quick' : 'full'}), seed ${plan.seed}: ${plan.faults.length} faults, ${this.expected} committed input records in ${waves.length} waves, limit ${Math.round(attempt.limitMs / 1000)} s.`,
    );
    for (let i = 1; i <= this.lab.instances; i++) this.startSlot(i);
    attempt.phase = 'running';
    attempt.downtimeAtStart = this.maintenance.downtimeMs;

    if (multi) {
      // Several instances join one by one (each join is a rebalance), and a program's first batch
      // of a partition may do extra work (a producer per partition, fencing). Let the group form
      // and process a first wave, so the first fault's crash point is reached as quickly as later ones.
      await this.waitForStableGroup(Math.min(12_000, attempt.deadline - Date.now()));
      await this.writeWave(this.nextWave());
      await this.progressTracker.waitFor(this.committedWritten, Math.min(15_000, attempt.deadline - Date.now()));
    }
    const queue: PlannedFault[] = plan.faults.map((f) => ({ ...f, attempt: 1 }));
    while (queue.length) {
      const fault = queue.shift()!;
      if (Date.now() > attempt.deadline) {
        this.obligations.outOfTime(fault, queue);
        break;
      }
      // Several instances: every start, exit and join is a rebalance. Arm the next fault once the
      // group is stable again, so the instance it targets owns partitions when the wave arrives.
      if (multi) await this.waitForStableGroup(Math.min(12_000, attempt.deadline - Date.now()));
      const recordedBefore = attempt.history.faults.length;
      const armedAt = Date.now();
      let outcome: FaultOutcome | void;
      try {
        outcome = await injectFault(this, fault, this.nextWave());
      } catch (err) {
        if (!(err instanceof FaultPastTimeLimit)) throw err;
        this.system(`${err.message} (a fault after the limit would only disturb what is about to be judged).`);
        this.obligations.outOfTime(fault, queue);
        break;
      }
      this.liveness.faultEnded(fault.kind);
      if (fault.attempt === 1 && !fault.disturbed) this.faultsDone++;
      const records = attempt.history.faults.slice(recordedBefore);
      this.obligations.settle(fault, records, queue, waves.length > 0, this.lostItsChance(fault, armedAt, records), outcome?.withoutEffect);
      await this.progressTracker.waitFor(this.committedWritten, Math.min(15_000, attempt.deadline - Date.now()), () => this.liveness.stuckAgain());
      await this.liveness.letStallShow();
      // keeps-up has its evidence; a program still stuck would only let the next faults fall back.
      if (queue.length) await this.restartStuck();
    }
    for (const wave of waves) await this.writeWave(wave);

    attempt.phase = 'settling';
    this.timedOut = !(await this.settle());
    if (this.timedOut) this.system(`Time limit of ${Math.round(attempt.limitMs / 1000)} s reached with ${this.processed}/${this.expected} inputs processed: verifying what is there.`);
    this.heldAtEnd = await this.liveness.transactionsHeldAtEnd();
    attempt.stopping = true;
    // A generous grace: a program finishing its last transaction on a busy machine must not be
    // SIGKILLed mid-transaction by us, or the hanging transaction would be blamed on it.
    await this.supervisor.stopAll(STOP_GRACE_MS);
    attempt.emitState();
    // Transactions of instances that are gone end when the coordinator aborts them: wait for that
    // (bounded) before anything is judged, and measure how long the output was held back.
    this.abandoned = await this.maintenance.withShared(() =>
      awaitAbandonedTransactions({
        probe: this.progressTracker.probe,
        brokers: this.brokers,
        namespace: attempt.namespace,
        topics: this.lab.topics.filter((t) => t.role !== 'input').map((t) => this.realTopic(t.name)),
        system: (line) => this.system(line),
      }),
    );
  }

  /**
   * Whether the program lost its chance at an aimed fault's point between arming and firing: it
   * exited on its own (the arm died with that incarnation), or the broker was down (the fault's own
   * downtime aside). Such a fallback is not counted as a try (fault-obligations.ts).
   */
  private lostItsChance(fault: PlannedFault, armedAt: number, records: readonly FaultRecord[]): boolean {
    const fired = records.find((r) => r.aimedAt);
    if (!fault.points?.length || !fired) return false;
    const firedAt = Date.now() - this.attempt.elapsed() + fired.atMs;
    const exited = this.supervisor.lastSelfExitAt >= armedAt && this.supervisor.lastSelfExitAt <= firedAt;
    const brokerFault = fault.kind === 'broker-restart' || fault.kind === 'coordinator-kill';
    const m = this.maintenance;
    const down = !brokerFault && m.lastDowntimeBeganAt <= firedAt && (m.isDown || m.lastDowntimeEndedAt >= armedAt);
    return exited || down;
  }

  /**
   * A liveness probe, as an orchestrator runs one: once keeps-up has recorded a stall and the
   * program is stuck still (input waiting, nothing holding it), its stuck instances are killed and
   * started again with the same identity, so the faults still owed reach their points in a running
   * program. (A failed send left unaborted wedges a program for good; without this, every fault
   * after it fell back and the one that exposes the program's other bug could run out of time.)
   * Only after a stall: a program that keeps up is never restarted by it.
   */
  private async restartStuck(): Promise<void> {
    if (!this.liveness.stuckNow()) return;
    const live = [...this.slots].filter((s) => s.current.alive);
    // Our wrapper says which instance holds the open transaction; otherwise every live one.
    const holding = live.filter((s) => s.txnOpen);
    const why = "stuck past keeps-up's bound with input waiting";
    for (const slot of holding.length ? holding : live) {
      this.attempt.history.mark('exit', slot.current.id, `liveness restart by the grader: ${why}`);
      await livenessRestart(this, slot, why);
    }
  }

  /** Multi-instance labs: waits until the group is Stable with one member per running slot. */
  private async waitForStableGroup(timeoutMs: number): Promise<void> {
    const wanted = () => [...this.slots].filter((s) => s.current.alive).length;
    const stable = await waitForStableGroup(this.attempt.kafka, this.attempt.groupId, wanted, timeoutMs);
    // null: the broker may be restarting; inject the fault anyway.
    if (stable === false) this.system(`the consumer group did not settle within ${(timeoutMs / 1000).toFixed(0)} s: injecting the next fault anyway`);
  }

  /** Waits until every committed input is accounted for, or nothing moved for a while. True if all done. */
  private async settle(): Promise<boolean> {
    const { attempt, progressTracker: progress } = this;
    // A seeding transaction held open (a lab's holdOpen) blocks read_committed readers until it
    // ends: nothing can be judged complete, or quiet, before then.
    await this.writer.settled();
    progress.lastActivityAt = Date.now();
    let lastHeldAt = 0;
    let overtimeSaid = false;
    while (Date.now() < attempt.deadline || this.overtime()) {
      if (!overtimeSaid && Date.now() >= attempt.deadline) {
        overtimeSaid = true;
        this.system(
          `Time limit of ${Math.round(attempt.limitMs / 1000)} s reached with ${progress.processed}/${this.expected} inputs processed, but the program is still keeping up (no stall): ` +
            `letting it finish, for up to ${Math.round((OVERTIME_SHARE * attempt.limitMs) / 1000)} s more.`,
        );
      }
      if (progress.processed >= this.expected && this.supervisor.zombies.size === 0 && progress.settled()) return true;
      const laterStagesBehind = progress.staged && progress.processed >= this.expected && !progress.stagesCaughtUp;
      let quietMs = this.driver.quietMs(QUIET_MS, laterStagesBehind);
      // Input waiting and a live instance sitting on an open transaction: a wedge, not the end of
      // the work. Wait long enough for keeps-up to see it as the stall it is.
      // (Once a stall is on record, keeps-up has its evidence: no need to wait for another.)
      if (this.committedWritten > progress.processed && this.liveness.liveTransactionOpen() && !this.liveness.stallFound) quietMs = Math.max(quietMs, STALL_BOUND_MS + 1_500);
      // A broker restart (this grade's or a parallel one's) is nobody's lack of progress, nor is
      // any other hold keeps-up allows: a restart or rebalance still within the group's timeouts (a
      // JVM restarted under load takes a while), a paused instance, a stopped instance's open
      // transaction the coordinator has yet to abort. Quiet counts from the end of the hold.
      if (this.liveness.holdReason()) lastHeldAt = Date.now();
      const quietSince = Math.max(progress.lastActivityAt, this.maintenance.lastDowntimeEndedAt, lastHeldAt);
      // Quiet after some work: its output counts too (offsets to the wrong place never show progress).
      if (!this.maintenance.isDown && Date.now() - quietSince > quietMs && progress.outputSeen) {
        this.system(`No progress for ${quietMs / 1000} s with ${progress.processed}/${this.expected} inputs processed: verifying now.`);
        return true;
      }
      await sleep(200);
    }
    return false;
  }

  /**
   * Past the time limit (no more faults fire), a program that is still keeping up settles on, at
   * most OVERTIME_SHARE of the limit more: on a busy machine a correct program's restarts take
   * longer (a JVM under load, a killed producer's transaction timeout), and the limit is there to
   * end a stuck program, not to cut off a working one. Keeping up means what keeps-up means: no
   * stall on record, and the current stretch without progress (holds aside) within the bound.
   */
  private overtime(): boolean {
    const { attempt } = this;
    if (Date.now() >= attempt.deadline + OVERTIME_SHARE * attempt.limitMs || this.liveness.stallFound) return false;
    return (this.stallWatch.developingMs() ?? 0) <= STALL_BOUND_MS;
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
