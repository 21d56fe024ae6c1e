/**
 * A pipeline grade's liveness: what may rightly hold the program back (a hold), the stall watch
 * behind keeps-up, letting a stuck program's stall show before the next fault restarts it, and the
 * transactions live instances still hold once the work is done (no-hanging-transactions).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { PipelineLab } from '../../../src/shared/lab.ts';
import type { FaultKind } from '../../../src/shared/report.ts';
import type { MaintenanceLock } from '../../broker/maintenance.ts';
import type { Slot, Supervisor } from '../program/supervisor.ts';
import type { PipelineProgress } from './progress.ts';
import { StallWatch } from './stall-watch.ts';

/**
 * keeps-up: longer than this without progress, input waiting and nothing holding the program is a
 * stall. Measured: the longest such pause of the reference solutions (bench:grader, see README).
 */
export const STALL_BOUND_MS = 12_000;
/**
 * Once keeps-up has its evidence (a stall past the bound), a program sitting on an open
 * transaction this long again, input waiting, is taken as stuck again at once: more waiting
 * would only repeat the finding, and the learner waits for the verdict.
 */
const STUCK_AGAIN_MS = 3_000;
/**
 * A consumer that asked for no records this long has stopped: the labs' consumers wait at most
 * 100 ms for records (maxWaitTimeInMs), so a working one asks several times a second.
 */
export const FETCH_STOPPED_MS = 3_000;
/** The extra time a restart of a --cmd program may rightly take (see rebalanceMs). */
const OPAQUE_START_MS = 20_000;
/** An open output transaction whose LSO has not moved for this long is taken as pinned (see holdReason). */
const LSO_PINNED_MS = 2_000;
/** How long an instance between calls may hold a transaction at the end before it counts as held. */
const HELD_GRACE_MS = 3_000;
/** How long an instance inside a client call may (a retried commit on a loaded machine takes seconds). */
const IN_CALL_GRACE_MS = 15_000;
/**
 * A program none of whose instances had sent the broker anything for this long when the broker
 * went down was not interrupted by that downtime: kafkajs asks for records several times a second
 * and heartbeats every few seconds, and a producer inside a long call keeps retrying it.
 */
const SILENT_BEFORE_DOWNTIME_MS = 5_000;
/** Faults that do not make the group rebalance or the program restart: they hold nothing. */
const HOLDS_NOTHING = new Set<FaultKind>(['send-error']);

/** What liveness needs of the pipeline scenario. */
export interface LivenessSource {
  readonly lab: PipelineLab;
  readonly attempt: { elapsed(): number; readonly deadline: number };
  readonly maintenance: MaintenanceLock;
  readonly supervisor: Supervisor;
  readonly progressTracker: PipelineProgress;
  /** Committed inputs written so far. */
  readonly committedWritten: number;
  realTopic(logical: string): string;
  /** Whether the program runs inside our wrapper (reports its calls), not as an opaque command. */
  wrapped(): boolean;
  /** Whether an output or internal partition has an open transaction (LSO < HWM); null if the broker did not say. */
  brokerSaysTransactionOpen(): Promise<boolean | null>;
}

export class PipelineLiveness {
  readonly stallWatch: StallWatch;
  /** When the last fault that rebalances or restarts something ended. */
  private lastHoldAt = 0;

  constructor(private readonly src: LivenessSource) {
    this.stallWatch = new StallWatch(
      {
        elapsed: () => src.attempt.elapsed(),
        waiting: () => src.committedWritten - src.progressTracker.processed,
        // Output that moves is progress only where the broker is all we can see (a --cmd program):
        // a wrapped program stuck aborting every transaction moves its output and commits nothing.
        lastActivityAt: () => {
          const progress = src.progressTracker;
          return Math.max(src.wrapped() ? progress.processedMovedAt : progress.lastActivityAt, progress.lastStartAt);
        },
        holdReason: () => this.holdReason(),
      },
      STALL_BOUND_MS,
    );
  }

  /** A fault was injected (or its handler ended): faults that rebalance or restart hold the program a while. */
  faultEnded(kind: FaultKind): void {
    if (!HOLDS_NOTHING.has(kind)) this.lastHoldAt = Date.now();
  }

  /** keeps-up already has its evidence: this grade recorded a stall past the bound. */
  get stallFound(): boolean {
    return this.stallWatch.stalls.length > 0;
  }

  /**
   * After a recorded stall: a live instance sits on an open transaction, input is waiting and
   * nothing has moved for STUCK_AGAIN_MS (the broker up, nobody paused). The grade goes on at once.
   */
  stuckAgain(): boolean {
    const { maintenance, progressTracker, committedWritten } = this.src;
    if (!this.stallFound || !this.liveInstanceWedged() || committedWritten <= progressTracker.processed) return false;
    if (maintenance.isDown || maintenance.isRecovering || this.anInstanceIsPaused()) return false;
    const heldUntil = Math.max(maintenance.lastDowntimeEndedAt, maintenance.lastRecoveryEndedAt);
    return Date.now() - Math.max(progressTracker.lastActivityAt, progressTracker.lastStartAt, heldUntil) >= STUCK_AGAIN_MS;
  }

  /**
   * Stuck now, after keeps-up has its evidence: an unheld stretch without progress past the bound
   * is under way, or the program is stuck again (stuckAgain).
   */
  stuckNow(): boolean {
    if (!this.stallFound) return false;
    const developing = this.stallWatch.developingMs();
    return (developing !== null && developing > STALL_BOUND_MS) || this.stuckAgain();
  }

  /** A zombie frozen by a fault, or an instance paused past its session timeout. */
  private anInstanceIsPaused(): boolean {
    const { supervisor } = this.src;
    return supervisor.zombies.size > 0 || [...supervisor.slots.values()].some((s) => s.current.state === 'paused');
  }

  /** Whether a live instance holds a transaction open (read on the wire, or reported by its wrapper without a sandbox). */
  liveTransactionOpen(): boolean {
    return [...this.src.supervisor.slots.values()].some((s) => s.current.alive && s.txnOpen);
  }

  /**
   * Whether a live instance looks wedged rather than done: it holds a transaction open, or, read
   * on the wire, its consumers have asked for no records for FETCH_STOPPED_MS (a consumer kafkajs
   * gave up on). A program that is merely wrong (offsets committed elsewhere) keeps fetching.
   */
  liveInstanceWedged(): boolean {
    const now = Date.now();
    return [...this.src.supervisor.slots.values()].some(
      (s) => s.current.alive && (s.txnOpen || (s.current.lastFetchAt !== undefined && s.current.lastFetchAt > 0 && now - s.current.lastFetchAt >= FETCH_STOPPED_MS)),
    );
  }

  /**
   * The lab's session + rebalance timeouts (capped): how long a restart or rebalance may rightly
   * take. A --cmd program does not get the lab's kafkajs settings: a JVM boots for seconds and its
   * consumer has timeouts of its own (Kafka's copier: a 10 s session, whose killed member a
   * restarted copier waits out), so it gets OPAQUE_START_MS more (bench: the copier's first start
   * took 16 s with 3 grades at a time).
   */
  private get rebalanceMs(): number {
    const { sessionTimeout = 30_000, rebalanceTimeout = 60_000 } = this.src.lab.kafkajs.consumer;
    return Math.min(sessionTimeout, 30_000) + Math.min(rebalanceTimeout, 30_000) + (this.src.wrapped() ? 0 : OPAQUE_START_MS);
  }

  /**
   * Why the program may rightly make no progress now: the broker is down or just back, an instance
   * is frozen, or a restart or rebalance is still within the group's session and rebalance timeouts.
   */
  holdReason(): string | null {
    const { maintenance, progressTracker } = this.src;
    const now = Date.now();
    // A broker restart (often another grade's, on a shared broker) holds a program it interrupted,
    // not one that had already gone quiet before it: that one's stall goes on through it. A node
    // killed on a cluster is down until it is back in every ISR, though its kill's own window is
    // only seconds: meanwhile leaders and coordinators move (twice, on a loaded machine), and a
    // client gives up its connections and starts over, its old transaction left to be fenced.
    const backAt = Math.max(maintenance.lastDowntimeEndedAt, maintenance.lastRecoveryEndedAt);
    const inDowntime = maintenance.isDown || maintenance.isRecovering || now - backAt < this.rebalanceMs;
    if (inDowntime && !this.silentSince(maintenance.lastDowntimeBeganAt - SILENT_BEFORE_DOWNTIME_MS)) {
      return maintenance.isDown ? 'broker down' : maintenance.isRecovering ? 'a killed broker is still coming back' : 'broker just back';
    }
    if (this.anInstanceIsPaused()) return 'an instance is paused';
    // The broker shows an open transaction no live instance says it holds (a --cmd program cannot
    // say): one a stopped instance left, which blocks readers and pending offsets until the
    // coordinator aborts it at its timeout. Kafka Streams waits for exactly that after a crash.
    // Such a transaction pins its LSO: an LSO that keeps moving is a live program's own writes and
    // aborts (its wrapper may not count a transaction whose sends all failed as open), no hold.
    const pinned = now - progressTracker.lsoMovedAt >= LSO_PINNED_MS;
    if (progressTracker.outputOpen && pinned && !this.liveTransactionOpen()) return "a stopped instance's transaction is still open";
    if (now - Math.max(this.lastHoldAt, progressTracker.lastStartAt) < this.rebalanceMs) return 'a rebalance or restart is pending';
    return null;
  }

  /**
   * Read on the wire: every live instance has sent the broker nothing since `at`, and was started
   * before it. False when an instance is not wire-watched or has never sent anything (still starting).
   */
  private silentSince(at: number): boolean {
    const live = [...this.src.supervisor.slots.values()].map((s) => s.current).filter((i) => i.alive);
    return live.length > 0 && live.every((i) => (i.startedAt ?? Infinity) < at && i.lastRequestAt !== undefined && i.lastRequestAt > 0 && i.lastRequestAt < at);
  }

  /**
   * A program wedged with input waiting (liveInstanceWedged), and not moving, is stuck. The next
   * fault, or a fault firing by fallback, would restart it and hide that: let the stall reach
   * keeps-up's bound first (through any hold that is still running out), unless the program moves
   * again. Costs nothing for a program that is working: it is not wedged, or makes progress
   * within a poll. Nor, once a stall is on record, for one that is stuck again.
   */
  async letStallShow(): Promise<void> {
    const { progressTracker } = this.src;
    // keeps-up has failed already, with evidence: a second stall would prove nothing new.
    if (this.stallFound) return;
    // Room for three bounds: a restart that interrupted the program holds the watch ('broker just
    // back'), and each hold starts the stretch again (bench: a quick grade's wedge of 40 s never
    // showed 12 s unheld within one bound). A restart after the program went quiet holds nothing.
    const until = Math.min(this.src.attempt.deadline, Date.now() + this.rebalanceMs + 3 * STALL_BOUND_MS);
    const processedAtStart = progressTracker.processed;
    while (Date.now() < until) {
      if (!this.liveInstanceWedged() || this.src.committedWritten <= progressTracker.processed) return;
      if (progressTracker.processed !== processedAtStart) return;
      const quiet = this.stallWatch.developingMs();
      if (quiet !== null && quiet > STALL_BOUND_MS + 1_000) return;
      await sleep(200);
    }
  }

  /**
   * Live instances that still hold a transaction open once the work is over (our wrapper says so):
   * a transaction the program itself never ends. Held means held the whole time: a program still
   * at work (the time limit may have come mid-batch) commits within the window and drops out; one
   * that never ends its transaction stays. So does one that exits within the window (a crash: no
   * fault is injected now) with records in a transaction it never ended: it held the transaction
   * when the work was done, and its exit leaves it to the coordinator's timeout, not ended.
   */
  async transactionsHeldAtEnd(): Promise<string[]> {
    const holding = () => [...this.src.supervisor.slots.values()].filter((s) => s.current.alive && s.txnOpen);
    let held = new Set(holding());
    const holdersAtEnd = [...held].map((s) => s.current);
    // Three seconds for one that sits between calls; an instance inside a client call (a commit
    // or a send its client is still retrying, slow on a loaded machine or while the group
    // rebalances) is ending its transaction, not holding it: it gets until the call returns,
    // bounded. A call that never returns holds the transaction all the same, and is named.
    const start = Date.now();
    const waitedEnough = (s: Slot) => Date.now() - start >= (s.callInFlight ? IN_CALL_GRACE_MS : HELD_GRACE_MS);
    while ([...held].some((s) => !waitedEnough(s))) {
      await sleep(100);
      const now = new Set(holding());
      held = new Set([...held].filter((s) => now.has(s)));
    }
    const at = (this.src.attempt.elapsed() / 1000).toFixed(1);
    // The relay's view only (wire truth): records written in a transaction the instance never ended.
    const exitedHolding = holdersAtEnd
      .filter((instance) => !instance.alive && instance.transactionWithRecordsOpen === true)
      .map((instance) => `${instance.id} held a transaction open after the work was done and exited without ending it (+${at} s): it never commits or aborts it`);
    const holdingThroughout = () => [...held].filter((s) => s.current.alive && s.txnOpen);
    if (!holdingThroughout().length) return exitedHolding;
    // Only a transaction that holds readers back counts: an empty one opened ahead of the next
    // batch blocks nobody. The broker shows one; or the relay saw the instance write records in a
    // transaction it never ended, which the broker no longer shows only because the coordinator
    // aborted it at its timeout (a long settling wait on a busy broker gets there). A program's own
    // word (its wrapper, without a sandbox) is never proof on its own.
    const brokerShowsOne = (await this.src.brokerSaysTransactionOpen()) === true;
    const counted = holdingThroughout().filter((s) => brokerShowsOne || s.current.transactionWithRecordsOpen === true);
    const timedOut = brokerShowsOne ? '' : ' (the broker has since aborted it at its transaction timeout)';
    return [...exitedHolding, ...counted.map((s) =>
      s.callInFlight
        ? `${s.current.id} still holds a transaction open after the work was done (+${at} s): its ${s.callInFlight} call has not returned in ${IN_CALL_GRACE_MS / 1000} s${timedOut}`
        : `${s.current.id} still holds a transaction open after the work was done (+${at} s): it never commits or aborts it${timedOut}`,
    )];
  }
}
