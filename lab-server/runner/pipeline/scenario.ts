/**
 * The pipeline scenario (kind 'pipeline'): seeded input in waves, the program's instances under
 * the supervisor, one planned fault per wave through the nemesis, then the output verified as a
 * read_committed consumer sees it. Performance labs time a throughput burst first (throughput.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { PipelineLab } from '../../../src/shared/lab.ts';
import type { CrashPoint } from '../../../src/shared/report.ts';
import { describeError, KafkaIqError } from '../../../src/shared/errors.ts';
import type { Supervisor } from '../program/supervisor.ts';
import { DEFAULTS_ENV } from '../program/child/protocol.ts';
import type { ManualFault } from '../contract.ts';
import type { AttemptDatabase } from '../database-attempt.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { AttemptLifecycle } from '../lifecycle.ts';
import type { Outcome, ProgressFigures, Scenario } from '../scenario.ts';
import type { NemesisContext } from '../nemesis/context.ts';
import { manualFault } from '../nemesis/manual.ts';
import { InputWriter, planSeedTransactions } from '../seeder.ts';
import { namespaceEnv, slotTransactionalId } from '../../kafka/attempt-names.ts';
import { FaultObligations } from './fault-obligations.ts';
import { PipelineLiveness } from './liveness.ts';
import type { StallWatch } from './stall-watch.ts';
import { collectPipeline } from './collect.ts';
import { pipelineNemesisContext, recordFault } from './nemesis-context.ts';
import { playPipeline } from './play.ts';
import { planGrade, type GradePlan } from './plan.ts';
import { pipelineSupervisor, preparePipeline } from './prepare.ts';
import { PipelineProgress } from './progress.ts';
import { NOTHING_PREPARED, type PipelineState, type Played, type PlannedPipeline, type Prepared } from './state.ts';

export class PipelineScenario implements Scenario<Played>, PipelineState {
  readonly progressEveryMs = 300;
  readonly lab: PipelineLab;
  readonly writer: InputWriter;
  readonly progressTracker: PipelineProgress;
  readonly supervisor: Supervisor;
  prepared: Prepared = NOTHING_PREPARED;
  /** The seeded plan of a grade (plan()); a Run has none. */
  gradePlan: GradePlan | null = null;
  faultsDone = 0;
  /** Every crash point some incarnation of the program reached (a 'call' or 'hit' event). */
  readonly reachedPoints = new Set<CrashPoint>();
  readonly committingProducers = new Set<string>();
  readonly obligations = new FaultObligations(this.reachedPoints, (line) => this.attempt.sink.system(line));
  readonly stallWatch: StallWatch;
  /** Holds, stalls and transactions held at the end (liveness.ts). */
  readonly liveness: PipelineLiveness;
  /** Set once collect has read the output (the report's counts). */
  private played: Played | null = null;

  constructor(
    readonly attempt: AttemptLifecycle,
    lab: PipelineLab,
  ) {
    this.lab = lab;
    this.writer = new InputWriter(attempt.kafka, `${attempt.graderId}-seeder`, (t) => attempt.realTopic(t), (fn) => attempt.maintenance.continueShared(fn));
    this.progressTracker = new PipelineProgress({
      kafka: attempt.kafka,
      brokers: attempt.options.brokers,
      lab: this.lab,
      groupId: attempt.groupId,
      realTopic: (t) => attempt.realTopic(t),
      written: () => this.writer.written,
      database: () => this.prepared.database,
      watchStages: () => attempt.options.mode !== 'run' && (attempt.phase === 'running' || attempt.phase === 'settling'),
      moved: () => this.supervisor.resetRestartCounts(),
      transactionOpen: () => this.liveness.liveTransactionOpen(),
      readFromDatabaseSinceStart: () =>
        [...this.supervisor.slots.values()].every((s) => {
          const { alive, lastQueryAt, startedAt } = s.current;
          return !alive || lastQueryAt === undefined || startedAt === undefined || lastQueryAt > startedAt;
        }),
    });
    this.supervisor = pipelineSupervisor(this);
    const writer = this.writer;
    this.liveness = new PipelineLiveness({
      lab,
      attempt,
      maintenance: attempt.maintenance,
      supervisor: this.supervisor,
      progressTracker: this.progressTracker,
      get committedWritten() {
        return writer.written.filter((r) => r.committed).length;
      },
      realTopic: (logical) => attempt.realTopic(logical),
      wrapped: () => attempt.source.kind === 'bundle',
      brokerSaysTransactionOpen: () => this.nemesis.cluster.brokerSaysTransactionOpen(),
    });
    this.stallWatch = this.liveness.stallWatch;
  }

  /** What the fault handlers and the driver see (nemesis-context.ts), built on first use. */
  get nemesis(): NemesisContext {
    return (this.nemesisContext ??= pipelineNemesisContext(this));
  }
  private nemesisContext?: NemesisContext;

  /** A program instance's env; another namespace (the throughput measurement) moves topics, group and ids there. */
  env(slot: number, namespace = this.attempt.namespace): Record<string, string> {
    const { database, api } = this.prepared;
    return {
      KAFKA_BROKERS: this.attempt.options.brokers.join(','),
      // Topics, GROUP_ID and TRANSACTIONAL_ID_PREFIX (shared by every instance: for one
      // transactional.id per input partition, see the zombie lab): the names the attempt is granted.
      ...namespaceEnv(this.lab, namespace),
      TRANSACTIONAL_ID: slotTransactionalId(namespace, slot),
      INSTANCE_ID: `i${slot}`,
      ...(database ? { DATABASE_URL: database.url } : {}),
      KAFKAJS_NO_PARTITIONER_WARNING: '1',
      ...this.attempt.tenancyEnv(),
      [DEFAULTS_ENV]: JSON.stringify(this.lab.kafkajs),
      ...(api && this.lab.api ? { [this.lab.api.env]: api.baseUrl } : {}),
    };
  }

  private planned(): PlannedPipeline {
    if (!this.gradePlan) throw new KafkaIqError('INTERNAL', 'a pipeline grade was played before it was planned');
    return this as PlannedPipeline;
  }

  // ---- Scenario --------------------------------------------------------------------------------

  plan(seed: number): void {
    this.gradePlan = planGrade(this.lab, this.attempt.options.mode === 'quick', seed);
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
      expected: this.gradePlan?.expected || this.nemesis.input.committedWritten,
      faultsDone: this.faultsDone,
      faultsPlanned: this.gradePlan?.faults.faults.length ?? 0,
    };
  }

  async prepare(): Promise<void> {
    this.prepared = await preparePipeline(this);
  }

  async playFree(): Promise<void> {
    const { attempt } = this;
    // Start the program first and seed while it boots and joins its group: the learner sees
    // output sooner (the seed takes about as long as a Node start and a group join).
    for (let i = 1; i <= this.lab.instances; i++) this.supervisor.start(i);
    attempt.phase = 'running';
    await attempt.maintenance.withShared(() => this.writer.write(planSeedTransactions(this.lab)));
    attempt.history.mark('wave', 'grader', 'all input written');
    await Promise.race([attempt.stopSignal, sleep(attempt.limitMs, undefined, { ref: false })]);
    if (attempt.elapsed() >= attempt.limitMs) attempt.sink.system(`Run stopped after its limit of ${Math.round(attempt.limitMs / 60_000)} min.`);
  }

  async play(): Promise<Played> {
    return (this.played = await playPipeline(this.planned()));
  }

  collect(played: Played): Promise<Outcome> {
    return collectPipeline(this.planned(), played);
  }

  stats(outcome: Outcome | null) {
    return {
      inputs: this.nemesis.input.committedWritten,
      abortedInputs: this.writer.written.filter((r) => !r.committed).length,
      outputs: outcome?.outputs ?? 0,
      abortedRecords: outcome?.abortedRecords ?? 0,
      ...(this.attempt.options.mode === 'run' ? {} : { longestStallMs: this.stallWatch.longestMs }),
      ...(this.played?.abandoned?.blockedMs ? { outputBlockedMs: this.played.abandoned.blockedMs } : {}),
    };
  }

  topics(): string[] {
    return this.lab.topics.map((t) => this.attempt.realTopic(t.name));
  }

  manualFault(kind: ManualFault, instanceId?: string): Promise<void> {
    const { supervisor, attempt } = this;
    return manualFault(
      {
        supervisor,
        control: attempt.options.control,
        maintenance: attempt.maintenance,
        target: (k, id) => {
          const slot = id ? [...supervisor.slots.values()].find((s) => s.current.id === id) : supervisor.first;
          if (!slot && k !== 'broker-restart' && k !== 'add-instance') {
            throw new KafkaIqError('INVALID_INPUT', `No instance ${id}: running are ${[...supervisor.slots.values()].map((s) => s.current.id).join(', ')}.`);
          }
          return slot;
        },
        record: (k, instance, note, slot) => void recordFault(this, { kind: k } satisfies Pick<PlannedFault, 'kind'>, instance, null, slot?.txnOpen ?? null, note),
        startSlot: (n) => supervisor.start(n),
        system: (line) => attempt.sink.system(line),
        emitState: () => attempt.emitState(),
        words: { kill: 'killed by you (SIGKILL); restarting with the same identity', pause: { kind: 'zombie', note: 'paused by you (SIGSTOP)' }, noAddInstance: null },
      },
      kind,
      instanceId,
    );
  }

  database(): AttemptDatabase | null {
    return this.prepared.database;
  }

  async shutdown(): Promise<void> {
    const { database, api } = this.prepared;
    await Promise.all(this.supervisor.live().map((i) => i.stop(2_000)));
    await database?.release().catch((err) => this.attempt.sink.system(`the attempt's database could not be given back: ${describeError(err)}`));
    await this.writer.disconnect();
    await this.progressTracker.close();
    api?.close();
  }
}
