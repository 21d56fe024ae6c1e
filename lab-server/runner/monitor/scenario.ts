/**
 * The monitor scenario (kind 'monitor'). The learner's program is a watcher, not a pipeline: it
 * gets WATCH_TOPIC, ALERTS_TOPIC and two thresholds, and must write an alert when a transaction
 * has been open for HANG_SECONDS and holds back at least BLOCKED_LAG_THRESHOLD offsets (HWM - LSO)
 * of a WATCH_TOPIC partition, and stay quiet otherwise.
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
 *     transactional id (InitProducerId) makes the coordinator abort it (cast.ts);
 *  4. everything stops and checkers/monitor-alerts.ts judges the alerts.
 * The grader reads the alerts and the coordinator's log live (watch.ts), for the timeline
 * and the evidence.
 */
import { withAdmin } from '../../kafka/client.ts';
import type { MonitorLab, MonitorSpec } from '../../../src/shared/lab.ts';
import type { FaultKind, FaultRecord } from '../../../src/shared/report.ts';
import { KafkaIqError } from '../../../src/shared/errors.ts';
import { OffsetsProbe } from '../../kafka/inspect.ts';
import { TRANSACTION_STATE_TOPIC } from '../../kafka/transaction-log.ts';
import { createTopics } from '../../kafka/topics.ts';
import { DEFAULTS_ENV } from '../program/child/protocol.ts';
import type { Collected, GradeHistory } from '../checkers/contract.ts';
import { runCheckers } from '../checkers/index.ts';
import type { AlertSeen, HangIncident } from '../checkers/monitor-alerts.ts';
import { monitorJudgement } from '../checkers/monitor-findings.ts';
import type { ManualFault } from '../contract.ts';
import { randomSeed, seededRandom } from '../fault-plan.ts';
import type { AttemptLifecycle } from '../lifecycle.ts';
import type { Outcome, ProgressFigures, Scenario } from '../scenario.ts';
import { manualFault } from '../nemesis/manual.ts';
import { Supervisor, supervisorPolicy } from '../program/supervisor.ts';
import type { Incident } from './cast-types.ts';
import { MonitorCast, OTHER_TEAM_PARTITIONS } from './cast.ts';
import { AlertWatch, namesId } from './watch.ts';

/** How long to wait for the monitor's consumer group before starting anyway. */
const READY_TIMEOUT_MS = 12_000;
const SAMPLE_MS = 250;

/**
 * A promise that is awaited later, with a handler attached now: if it fails while something else
 * is awaited first, Node must not take it for an unhandled rejection (which ends the process).
 */
function settled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {
    // The failure itself reaches whoever awaits the promise; this handler only marks it handled.
  });
  return promise;
}

export class MonitorScenario implements Scenario {
  readonly progressEveryMs = 500;
  readonly supervisor: Supervisor;
  private readonly spec: MonitorSpec;
  private readonly otherTopic: string;
  private readonly watch: AlertWatch;
  private readonly cast: MonitorCast;
  private probe: OffsetsProbe | null = null;
  private sampler: NodeJS.Timeout | null = null;
  private incidentsPlanned = 0;
  private seed = 0;

  constructor(
    private readonly attempt: AttemptLifecycle,
    private readonly lab: MonitorLab,
  ) {
    this.spec = lab.monitor;
    const history = attempt.history;
    this.supervisor = new Supervisor(
      () => attempt.source,
      {
        env: () => this.env(),
        line: (instance, stream, line) => attempt.sink.line(instance.id, stream, line),
        started: (slot) => history.mark('start', 'i1', slot.incarnation > 1 ? `incarnation ${slot.incarnation}` : undefined),
        exited: (_instance, code, signal) => history.mark('exit', 'i1', signal ? `signal ${signal}` : `code ${code}`),
        changed: () => attempt.emitState(),
        stopping: () => attempt.stopping,
      },
      supervisorPolicy(this.system),
    );
    this.otherTopic = `${attempt.namespace}-other-team`;
    this.watch = new AlertWatch(attempt.kafka, attempt.namespace, attempt.graderId, this.alertsTopic, () => attempt.startedAt, (alert) => this.echo(alert));
    this.cast = new MonitorCast(attempt, this.spec, attempt.realTopic(this.spec.watch), this.otherTopic, this.watch, () => this.incidentsPlanned);
  }

  private get alertsTopic(): string {
    return this.attempt.realTopic(this.spec.alerts);
  }

  private get system() {
    return (line: string) => this.attempt.sink.system(line);
  }

  plan(seed: number): void {
    this.seed = seed;
    this.cast.random = seededRandom(seed);
    const specs = this.attempt.options.mode === 'quick' ? this.lab.faults.quick : this.lab.faults.full;
    this.incidentsPlanned = specs.filter((f) => f.kind === 'hanging-transaction').length;
  }

  pollProgress(): void {
    this.attempt.emitProgress();
  }

  progress(): ProgressFigures {
    const { incidents } = this.cast;
    const reported = incidents.filter((i) => this.watch.alerts.some((a) => namesId(a, i.transactionalId))).length;
    return { processed: reported, expected: this.incidentsPlanned || incidents.length, faultsDone: incidents.length, faultsPlanned: this.incidentsPlanned || incidents.length };
  }

  async prepare(): Promise<void> {
    const { attempt } = this;
    await attempt.maintenance.withShared(async () => {
      const topics = [
        ...this.lab.topics.map((t) => ({
          topic: attempt.realTopic(t.name),
          numPartitions: t.partitions,
          // The broker stamps each alert with the time it was written: the timing is the broker's, not the program's.
          ...(t.name === this.spec.alerts ? { configEntries: [{ name: 'message.timestamp.type', value: 'LogAppendTime' }] } : {}),
        })),
        { topic: this.otherTopic, numPartitions: OTHER_TEAM_PARTITIONS },
      ];
      // Where __transaction_state ends now: the grader reads the coordinator's log from here on.
      const stateOffsets = await createTopics(attempt.kafka, topics, async (admin) =>
        (await admin.fetchTopicOffsets(TRANSACTION_STATE_TOPIC)).map((p) => ({ partition: p.partition, offset: p.offset })),
      );
      await this.watch.start(stateOffsets);
    });
    const probe = new OffsetsProbe(attempt.options.brokers);
    this.probe = probe;
    this.sampler = setInterval(() => void this.cast.sample(probe), SAMPLE_MS);
  }

  private env(): Record<string, string> {
    const { attempt } = this;
    return {
      KAFKA_BROKERS: attempt.options.brokers.join(','),
      ...attempt.topicEnv(),
      GROUP_ID: attempt.groupId,
      BLOCKED_LAG_THRESHOLD: String(this.spec.blockedLagThreshold),
      HANG_SECONDS: String(this.spec.hangSeconds),
      INSTANCE_ID: 'i1',
      KAFKAJS_NO_PARTITIONER_WARNING: '1',
      ...this.attempt.tenancyEnv(),
      [DEFAULTS_ENV]: JSON.stringify(this.lab.kafkajs),
    };
  }

  /** Echoes an alert to the learner, saying whom it names. */
  private echo(alert: AlertSeen): void {
    const about = (() => {
      try {
        const id = JSON.parse(alert.value ?? '').transactionalId;
        if (this.cast.incidents.some((i) => i.transactionalId === id)) return ' (names a transaction the grader left hanging)';
        const look = this.cast.lookAlikes.find((l) => l.transactionalId === id);
        return look ? ` (names ${look.why.split(':')[0]})` : '';
      } catch {
        return ' (not JSON)';
      }
    })();
    this.system(`ALERTS_TOPIC @${alert.offset} at +${(alert.atMs / 1000).toFixed(1)} s: ${(alert.value ?? 'null').slice(0, 300)}${about}`);
  }

  async playFree(): Promise<void> {
    const { attempt, cast } = this;
    cast.random = seededRandom(randomSeed());
    this.supervisor.start(1);
    attempt.phase = 'running';
    cast.startWorkload();
    this.system(
      `Run: ${this.spec.workload.producers} producers commit short transactions on WATCH_TOPIC partitions ${this.spec.workload.partitions.join(', ')}. ` +
        `Every cycle the grader adds a slow transaction, a long one on a quiet partition, one hanging on another team's topic, then leaves one hanging on WATCH_TOPIC and fences it later. ` +
        `Alerts your monitor writes to ALERTS_TOPIC are echoed here.`,
    );
    let next = settled(cast.prepareCycle(1));
    await this.waitForMonitor();
    while (!attempt.stopping && attempt.elapsed() < attempt.limitMs) {
      await cast.playCycle(await next, { holdMs: (this.spec.hangSeconds + this.spec.reportWithinSeconds + 6) * 1000 });
      next = settled(cast.prepareCycle(1));
      if (!(await attempt.sleepUnlessStopped(5_000))) break;
    }
    await next.catch(() => {}); // the run is over: a cycle that failed to prepare is not played
    if (attempt.elapsed() >= attempt.limitMs) this.system(`Run stopped after its limit of ${Math.round(attempt.limitMs / 60_000)} min.`);
  }

  async play(): Promise<void> {
    const { attempt, cast } = this;
    const { hangSeconds, blockedLagThreshold, reportWithinSeconds } = this.spec;
    this.system(
      `Grading ${attempt.lab.id} (${attempt.options.mode === 'quick' ? 'quick' : 'full'}), seed ${this.seed}: ${this.incidentsPlanned} hanging transaction(s) among look-alikes; ` +
        `HANG_SECONDS=${hangSeconds}, BLOCKED_LAG_THRESHOLD=${blockedLagThreshold}, alerts due within ${reportWithinSeconds} s.`,
    );
    this.supervisor.start(1);
    attempt.phase = 'running';
    // While the scenario runs, no other attempt in this process restarts the broker under it:
    // the timing of the alerts is what is graded.
    await attempt.maintenance.withShared(async () => {
      cast.startWorkload();
      const cycle = settled(cast.prepareCycle(this.incidentsPlanned));
      await this.waitForMonitor();
      await cast.playCycle(await cycle, { holdMs: null });
      attempt.phase = 'settling';
      await attempt.sleepUnlessStopped(1_000);
      await this.stopMonitor();
      await cast.stopWorkload();
      await cast.endOpen();
      await this.watch.catchUp(this.probe!, 4_000);
    });
  }

  private async stopMonitor(): Promise<void> {
    const instance = this.supervisor.first?.current;
    if (!instance) return;
    this.supervisor.expectExit(instance);
    await instance.stop(3_000);
  }

  /**
   * The monitor is ready when its consumer group (GROUP_ID) is stable with a member, plus a moment
   * for its first fetches. A monitor that uses another group id just gets the time limit.
   */
  private async waitForMonitor(): Promise<void> {
    const { attempt } = this;
    const until = Date.now() + READY_TIMEOUT_MS;
    await withAdmin(attempt.kafka, async (admin) => {
      while (Date.now() < until && !attempt.stopping) {
        try {
          const { groups } = await admin.describeGroups([attempt.groupId]);
          if (groups[0]?.state === 'Stable' && groups[0].members.length > 0) {
            this.system(`the monitor joined its consumer group (GROUP_ID) at +${(attempt.elapsed() / 1000).toFixed(1)} s`);
            await attempt.sleepUnlessStopped(1_000);
            return;
          }
        } catch {
          // The group does not exist yet, or the broker is busy: ask again until the time is up.
        }
        await attempt.sleepUnlessStopped(250);
      }
      if (!attempt.stopping) this.system(`the monitor has no stable consumer group GROUP_ID after ${READY_TIMEOUT_MS / 1000} s: starting anyway`);
    });
  }

  async collect(): Promise<Outcome> {
    const { cast, spec } = this;
    const { hangSeconds, blockedLagThreshold, reportWithinSeconds } = spec;
    const collected: Collected = {
      pipeline: null,
      monitor: {
        watchTopic: cast.watchTopic,
        threshold: blockedLagThreshold,
        hangSeconds,
        reportWithinSeconds,
        incidents: cast.incidents.map((i) => this.toHangIncident(i)),
        lookAlikes: cast.lookAlikes,
        alerts: this.watch.alerts,
        quietSummary: this.quietSummary(),
      },
    };
    const history: GradeHistory = { namespace: this.attempt.namespace, startedAt: this.attempt.startedAt, faults: this.attempt.history.faults, stalls: { stalls: [], boundMs: 0, longestMs: 0 }, transactions: null, cutOff: null };
    const judged = monitorJudgement(collected, history)!;
    const notCreated = cast.incidents.filter((i) => !this.created(i));
    const missingIncidents = this.incidentsPlanned - cast.incidents.length;
    const setUpFailed = notCreated.length > 0 || missingIncidents > 0;
    const why = notCreated.map((i) => `#${i.n} ${i.problem ?? `its blocked lag reached only ${i.lagAtQualify ?? 0} (threshold ${blockedLagThreshold})`}`);
    const delays = [...judged.reported].map(([n, a]) => (a.atMs - cast.incidents.find((i) => i.n === n)!.qualifiesAtMs) / 1000);
    return {
      checks: runCheckers(this.lab.checks, collected, history),
      outputs: this.watch.alerts.length,
      abortedRecords: 0,
      verdict: () => ({
        // A monitor cannot be blamed for not reporting a transaction the grader failed to leave hanging.
        excused: setUpFailed ? ['hanging-transaction-reported'] : [],
        inconclusive:
          setUpFailed || cast.incidents.length === 0
            ? `The grader could not leave every planned transaction hanging as intended (${why.join('; ') || `${missingIncidents} never opened`}), so the monitor was not really tested: grade again.`
            : null,
        passMessage:
          `Both checks held: the monitor named all ${cast.incidents.length} hanging transaction(s) ${delays.map((d) => `${Math.max(0, d).toFixed(1)} s`).join(' and ')} after they were due, ` +
          `and raised no false alarm in ${this.watch.alerts.length} alert(s).`,
      }),
    };
  }

  private created(i: Incident): boolean {
    return !i.problem && i.offset !== null && (i.lagAtQualify ?? 0) >= this.spec.blockedLagThreshold;
  }

  private toHangIncident(i: Incident): HangIncident {
    const states = this.watch.coordinator.get(i.transactionalId) ?? [];
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
    const { tracked, workload } = this.cast;
    const part: string[] = [];
    const slow = tracked.find((t) => t.role === 'slow');
    const idle = tracked.find((t) => t.role === 'idle');
    if (slow?.endedAtMs != null && slow.openedAtMs != null) part.push(`a slow transaction (committed after ${((slow.endedAtMs - slow.openedAtMs) / 1000).toFixed(1)} s, blocked lag up to ${slow.maxLag})`);
    if (idle?.endedAtMs != null && idle.openedAtMs != null) part.push(`a long one on quiet partition ${idle.partition} (open ${((idle.endedAtMs - idle.openedAtMs) / 1000).toFixed(1)} s, blocked lag ${idle.maxLag})`);
    if (tracked.some((t) => t.role === 'other')) part.push(`one hanging on another team's topic`);
    part.push(`${workload.transactions} short transactions of ${this.spec.workload.producers} producers`);
    return part.join(', ');
  }

  stats() {
    return {
      inputs: this.cast.workload.committed,
      abortedInputs: this.cast.incidents.filter((i) => i.offset !== null).length,
      outputs: this.watch.alerts.length,
      abortedRecords: 0,
    };
  }

  topics(): string[] {
    return [...Object.values(this.attempt.topicEnv()), this.otherTopic];
  }

  manualFault(kind: ManualFault, instanceId?: string): Promise<void> {
    const { attempt } = this;
    const supervisor = this.supervisor;
    return manualFault(
      {
        supervisor,
        control: attempt.options.control,
        maintenance: attempt.maintenance,
        target: (k, id) => {
          if (id && id !== 'i1') throw new KafkaIqError('INVALID_INPUT', `No instance ${id}: a monitor runs as i1 only.`);
          const slot = supervisor.first;
          if (!slot && (k === 'kill' || k === 'pause' || k === 'resume')) throw new KafkaIqError('INVALID_INPUT', 'The monitor is not running.');
          return slot;
        },
        record: (k: FaultKind, instance, note) => {
          const r: FaultRecord = { atMs: attempt.elapsed(), kind: k, instance, inTransaction: null, note };
          attempt.history.fault(r);
          attempt.history.mark('fault', instance, k);
          attempt.options.listener.fault(r);
          this.system(`fault: ${k} ${instance} — ${note}`);
        },
        startSlot: (n) => supervisor.start(n),
        system: this.system,
        emitState: () => attempt.emitState(),
        words: {
          kill: 'killed by you (SIGKILL); restarting it',
          pause: { kind: 'pause', note: 'paused by you (SIGSTOP): a frozen monitor raises no alerts' },
          noAddInstance: 'A monitor runs as one instance: there is nothing to add.',
        },
      },
      kind,
      instanceId,
    );
  }

  async shutdown(): Promise<void> {
    if (this.sampler) clearInterval(this.sampler);
    await this.supervisor.first?.current.stop(2_000);
    await this.cast.close();
    await this.watch.close();
    await this.cast.disconnect();
    await this.probe?.close();
  }
}
