/**
 * The monitor scenario's cast: the grader's own transactional producers. A background workload
 * commits short transactions the whole time; each cycle adds the look-alikes (a long transaction
 * on a quiet partition, one hanging on another team's topic, a slow but healthy one) and the
 * hanging transactions the monitor must report, which the grader then fences.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Producer } from 'kafkajs';
import type { MonitorSpec } from '../../../src/shared/lab.ts';
import type { FaultRecord } from '../../../src/shared/report.ts';
import { describeError } from '../../../src/shared/errors.ts';
import { bestEffort } from '../../core/best-effort.ts';
import type { OffsetsProbe } from '../../kafka/inspect.ts';
import type { LookAlike } from '../checkers/monitor-alerts.ts';
import type { AttemptLifecycle } from '../lifecycle.ts';
import type { Cycle, Ending, Incident, Tracked } from './cast-types.ts';
import { namesId, type AlertWatch } from './watch.ts';

/** The grader's own transactions stay open this long at most, even if the grader dies. */
const GRADER_TXN_TIMEOUT_MS = 120_000;
export const OTHER_TEAM_PARTITIONS = 3;

export class MonitorCast {
  readonly tracked: Tracked[] = [];
  readonly incidents: Incident[] = [];
  readonly lookAlikes: LookAlike[] = [];
  readonly workload = { stop: false, loops: [] as Promise<void>[], committed: 0, transactions: 0, failures: 0 };
  random: () => number = Math.random;
  private readonly producers: Producer[] = [];
  private nextApp = 1;
  private sampling = false;

  constructor(
    private readonly attempt: AttemptLifecycle,
    private readonly spec: MonitorSpec,
    readonly watchTopic: string,
    readonly otherTopic: string,
    private readonly watch: AlertWatch,
    /** Hanging transactions the grade plans (for "fault n/planned"). */
    private readonly incidentsPlanned: () => number,
  ) {}

  private producer = async (transactionalId: string, transactionTimeout = GRADER_TXN_TIMEOUT_MS): Promise<Producer> => {
    const producer = this.attempt.kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout });
    await producer.connect();
    this.producers.push(producer);
    return producer;
  };

  private appId(): string {
    return `${this.attempt.namespace}-app-${this.nextApp++}`;
  }

  startWorkload(): void {
    const { producers, pauseMs, partitions, recordsPerPartition } = this.spec.workload;
    this.workload.stop = false;
    this.attempt.history.mark('wave', 'grader', `background workload: ${producers} producers, short committed transactions on WATCH_TOPIC partitions ${partitions.join(', ')}`);
    for (let i = 0; i < producers; i++) {
      const id = this.appId();
      this.lookAlikes.push({ transactionalId: id, why: 'a workload producer: its short transactions commit within milliseconds' });
      this.workload.loops.push(this.workloadLoop(id, partitions, pauseMs, recordsPerPartition));
    }
  }

  private async workloadLoop(transactionalId: string, partitions: number[], pauseMs: number, perPartition: number): Promise<void> {
    let producer: Producer | null = null;
    let n = 0;
    while (!this.workload.stop && !this.attempt.stopping) {
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
          await txn.abort().catch(() => {
            // The send's or commit's error is the one counted; an abort that fails too leaves the
            // transaction to the coordinator, which aborts it after its 30 s timeout.
          });
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

  async stopWorkload(): Promise<void> {
    this.workload.stop = true;
    await Promise.all(this.workload.loops.splice(0));
    this.attempt.history.mark('wave', 'grader', `background workload stopped after ${this.workload.transactions} transactions`);
  }

  /** Opens a transaction with one record per partition; the first partition's offset is kept. */
  /** Opens t's transaction with `records` records on each of `partitions`. */
  private async open(t: Tracked, partitions: number[], records = 1): Promise<void> {
    const txn = t.begun ?? (await t.producer.transaction());
    t.openedAtMs = this.attempt.elapsed();
    const [meta] = await txn.send({
      topic: t.topic,
      messages: partitions.flatMap((p) => Array.from({ length: records }, () => ({ key: `${t.role}-${p}`, value: JSON.stringify({ from: t.transactionalId, role: t.role }), partition: p }))),
    });
    t.txn = txn;
    t.offset = meta ? Number(meta.baseOffset) : null;
  }

  /** Commits t's open transaction: true once committed, false when it had already ended; a failed commit throws. */
  private async commit(t: Tracked): Promise<boolean> {
    if (!t.txn || t.endedAtMs !== null) return false;
    await t.txn.commit();
    t.endedAtMs = this.attempt.elapsed();
    await this.disconnectProducer(t.producer);
    return true;
  }

  private disconnectProducer(producer: Producer): Promise<void> {
    return bestEffort('disconnect a producer of the monitor lab', () => producer.disconnect());
  }

  /**
   * Ends a hanging transaction as an operator would: a new producer with the same transactional id
   * registers it again (InitProducerId), and the coordinator bumps the epoch and aborts what the old
   * one left open. If that fails, the old producer aborts it itself.
   */
  private async fence(t: Tracked): Promise<Ending> {
    if (!t.txn || t.endedAtMs !== null) return { ended: false, note: 'it had already ended' };
    let fencer: Producer | null = null;
    try {
      fencer = await this.producer(t.transactionalId);
      const txn = await fencer.transaction();
      await txn.abort();
      t.endedAtMs = this.attempt.elapsed();
      return { ended: true, note: 'fenced: a new producer registered the same transactional id, and the coordinator aborted the open transaction' };
    } catch (fenceErr) {
      try {
        await t.txn.abort();
        t.endedAtMs = this.attempt.elapsed();
        return { ended: true, note: `aborted by its producer (fencing failed: ${describeError(fenceErr)})` };
      } catch (abortErr) {
        // endedAtMs stays null: the checker then treats it as open to the end, so no alert about it is called stale.
        return {
          ended: false,
          note: `not ended: fencing failed (${describeError(fenceErr)}) and so did its producer's abort (${describeError(abortErr)}); its transaction timeout (${GRADER_TXN_TIMEOUT_MS / 1000} s) aborts it`,
        };
      }
    } finally {
      await Promise.all([fencer, t.producer].map((p) => p && this.disconnectProducer(p)));
    }
  }

  /** Every transaction the grader still holds open is ended (the run is over). */
  async endOpen(): Promise<void> {
    await Promise.all(this.tracked.filter((t) => t.txn && t.endedAtMs === null).map((t) => this.fence(t)));
  }

  /** One measurement of the watched topic: HWM - LSO per partition, credited to whichever of our transactions holds that LSO. */
  async sample(probe: OffsetsProbe): Promise<void> {
    if (this.sampling || this.attempt.stopping) return;
    this.sampling = true;
    try {
      const offsets = await probe.offsets(this.watchTopic);
      const now = this.attempt.elapsed();
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
  async prepareCycle(hangs: number): Promise<Cycle> {
    const watch = this.attempt.lab.definition.topics.find((t) => t.name === this.spec.watch)!;
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
    const ns = this.attempt.namespace;
    const ids = {
      idle: `${ns}-batch-${this.nextApp++}`,
      other: `${ns}-billing-${this.nextApp++}`,
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
  async playCycle(cycle: Cycle, { holdMs }: { holdMs: number | null }): Promise<void> {
    const { attempt } = this;
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
    attempt.sink.system(
      `grader: ${idle.transactionalId} holds a transaction on quiet partition ${idle.partition} for ${idleOpenMs / 1000} s; ${other.transactionalId} leaves one hanging on another team's topic`,
    );
    const idleDone = (async () => {
      await attempt.sleepUnlessStopped(idleOpenMs - (attempt.elapsed() - idle.openedAtMs!));
      try {
        if (await this.commit(idle)) attempt.history.mark('commit', 'grader', `${idle.transactionalId}: long transaction on a quiet partition committed`);
      } catch (err) {
        // Not committed: ended the way a hanging one is, and the timeline says which way it ended.
        const ending = await this.fence(idle);
        const note = `${idle.transactionalId}: the long transaction's commit failed (${describeError(err)}); ${ending.note}`;
        if (ending.ended) attempt.history.mark('abort', 'grader', note);
        attempt.sink.system(`grader: ${note}`);
      }
    })();

    // A slow but healthy transaction: a big batch that blocks a busy partition past the threshold
    // from its first write, and commits in time. Above the threshold for as long as a healthy
    // transaction may stay open (up to 1.3 s short of HANG_SECONDS), so that a monitor which
    // alerts on the lag alone sees it in any of its polls, however loaded the machine.
    if (await attempt.sleepUnlessStopped(500)) {
      this.tracked.push(slow);
      await this.open(slow, [slow.partition], 2 * blockedLagThreshold);
      const latest = slow.openedAtMs! + (hangSeconds - 1.3) * 1000;
      while (attempt.elapsed() < latest && !attempt.stopping) await sleep(100);
      // A failed commit ends the play (the grade cannot judge a slow transaction that never committed).
      if (await this.commit(slow)) {
        const slowSecs = ((slow.endedAtMs! - slow.openedAtMs!) / 1000).toFixed(1);
        this.lookAlikes.push({ transactionalId: slow.transactionalId, why: `a slow but healthy transaction: it committed after ${slowSecs} s, before HANG_SECONDS (${hangSeconds})` });
        attempt.history.mark('commit', 'grader', `${slow.transactionalId}: slow transaction on partition ${slow.partition} committed after ${slowSecs} s (blocked lag up to ${slow.maxLag})`);
        attempt.sink.system(
          `grader: ${slow.transactionalId} held partition ${slow.partition} for ${slowSecs} s (blocked lag up to ${slow.maxLag}), then committed: a slow transaction, not a hanging one`,
        );
      }
    }

    for (const incident of cycle.hangs) {
      if (!(await attempt.sleepUnlessStopped(500))) break;
      await this.hang(incident, holdMs);
    }
    await idleDone;
    if (!attempt.stopping) {
      const ending = await this.fence(other);
      const note = `${other.transactionalId} (other team's topic): ${ending.note}`;
      if (ending.ended) attempt.history.mark('abort', 'grader', note);
      else attempt.sink.system(`grader: ${note}`);
    }
  }

  private async hang(t: Tracked, holdMs: number | null): Promise<void> {
    const { attempt } = this;
    const { hangSeconds, reportWithinSeconds } = this.spec;
    const n = this.incidents.length + 1;
    const incident: Incident = Object.assign(t, { n, qualifiesAtMs: 0, deadlineMs: 0, lagAtQualify: null as number | null });
    const id = incident.transactionalId;
    try {
      await this.open(incident, [incident.partition]);
    } catch (err) {
      incident.problem = `the grader could not open it (${describeError(err)})`;
    }
    incident.openedAtMs ??= attempt.elapsed();
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
    attempt.history.fault(record);
    attempt.options.listener.fault(record);
    attempt.history.mark('fault', 'grader', `hanging-transaction ${id} on partition ${incident.partition}`);
    attempt.sink.system(`fault ${n}${attempt.options.mode === 'run' ? '' : `/${this.incidentsPlanned()}`}: hanging-transaction — ${record.note}`);
    if (incident.problem) return;

    if (holdMs === null) {
      // Grade: wait for an alert that names it (or the deadline), plus a moment for anything else.
      while (!attempt.stopping) {
        this.settleDueTimes(incident);
        if (attempt.elapsed() >= incident.deadlineMs) break;
        if (this.watch.alerts.some((a) => a.atMs >= incident.qualifiesAtMs - 1_000 && namesId(a, id))) break;
        await sleep(100);
      }
      await attempt.sleepUnlessStopped(500);
    } else {
      await attempt.sleepUnlessStopped(holdMs);
    }
    this.settleDueTimes(incident);
    if (incident.lagAtQualify === null) incident.lagAtQualify = incident.maxLag;
    const ending = await this.fence(incident);
    if (ending.ended) attempt.history.mark('abort', 'grader', `${id}: ${ending.note}`);
    attempt.sink.system(`grader: ${id} ${ending.note} (blocked lag had reached ${incident.maxLag})`);
  }

  /**
   * A hanging transaction is due HANG_SECONDS after the coordinator started it. The grader's own
   * clock (just before its send) is the fallback; the coordinator's start time, once its log shows
   * the transaction Ongoing, is what the monitor sees, so it wins (a send on a busy machine takes
   * a while).
   */
  private settleDueTimes(incident: Incident): void {
    const started = this.watch.coordinator.get(incident.transactionalId)?.find((s) => s.state === 'Ongoing')?.startMs;
    const base = Math.max(incident.openedAtMs ?? 0, started ?? 0);
    incident.qualifiesAtMs = base + this.spec.hangSeconds * 1000;
    incident.deadlineMs = incident.qualifiesAtMs + this.spec.reportWithinSeconds * 1000;
  }

  /** Stops the workload and aborts whatever is still open (a Run stopped mid-cycle) with its own producer, quickly. */
  async close(): Promise<void> {
    this.workload.stop = true;
    await Promise.all(this.workload.loops.splice(0));
    const open = this.tracked.filter((t) => t.txn && t.endedAtMs === null);
    await Promise.all(
      open.map((t) =>
        bestEffort(`abort the grader's transaction ${t.transactionalId}`, async () => {
          await t.txn!.abort();
          t.endedAtMs = this.attempt.elapsed();
        }),
      ),
    );
  }

  async disconnect(): Promise<void> {
    await Promise.all(this.producers.map((p) => this.disconnectProducer(p)));
  }
}
