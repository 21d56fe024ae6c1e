/**
 * A pipeline grade's plan played out (PipelineScenario.play): the input written in waves, the
 * seeded faults injected one by one and owed again when they miss (fault-obligations.ts), a
 * liveness restart for a program stuck past keeps-up's bound, then settling until the work is
 * accounted for, and the transactions stopped instances left for the coordinator to resolve.
 */
import type { FaultRecord } from '../../../src/shared/report.ts';
import { waitForStableGroup as waitForGroup } from '../../kafka/group-wait.ts';
import { FaultPastTimeLimit } from '../driver/until-deadline.ts';
import { owedAgain, type PlannedFault } from '../fault-plan.ts';
import type { FaultOutcome } from '../nemesis/context.ts';
import { injectFault } from '../nemesis/index.ts';
import { livenessRestart } from '../nemesis/process-faults.ts';
import { MAX_SELF_RESTARTS } from '../program/supervisor.ts';
import { awaitAbandonedTransactions } from './abandoned-transactions.ts';
import { STALL_BOUND_MS } from './liveness.ts';
import type { Played, PlannedPipeline } from './state.ts';
import { measureThroughput } from './throughput.ts';

const QUIET_MS = 6_000;
const STOP_GRACE_MS = 8_000;
/** How much longer than its limit a grade may settle while the program keeps up (see overtime). */
const OVERTIME_SHARE = 0.5;

export async function playPipeline(s: PlannedPipeline): Promise<Played> {
  const { attempt, gradePlan, nemesis: ctx } = s;
  const plan = gradePlan.faults;
  // Performance labs: time a baseline and the learner's program on bursts of their own topics
  // first, before any fault, so the timing is clean and the lab's topics stay untouched.
  const throughput = s.lab.throughput
    ? await measureThroughput({
        lab: { dir: attempt.lab.dir, definition: s.lab },
        kafka: attempt.kafka,
        brokers: ctx.cluster.brokers,
        namespace: attempt.namespace,
        graderId: attempt.graderId,
        learner: attempt.source,
        env: (namespace) => s.env(1, namespace),
        workDir: attempt.workDir,
        system: (line) => ctx.log.system(line),
        output: (instance, stream, line) => attempt.sink.line(instance, stream, line),
      })
    : null;
  const { waves, expected } = gradePlan;
  const multi = s.lab.instances > 1;
  ctx.log.system(
    `Grading ${attempt.lab.id} (${attempt.options.mode === 'quick' ? 'quick' : 'full'}), seed ${plan.seed}: ${plan.faults.length} faults, ${expected} committed input records in ${waves.length} waves, limit ${Math.round(attempt.limitMs / 1000)} s.`,
  );
  for (let i = 1; i <= s.lab.instances; i++) ctx.program.startSlot(i);
  attempt.phase = 'running';
  attempt.downtimeAtStart = ctx.cluster.maintenance.downtimeMs;

  if (multi) {
    // Several instances join one by one (each join is a rebalance), and a program's first batch
    // of a partition may do extra work (a producer per partition, fencing). Let the group form
    // and process a first wave, so the first fault's crash point is reached as quickly as later ones.
    await waitForStableGroup(s, Math.min(12_000, attempt.deadline - Date.now()));
    await ctx.input.writeWave(ctx.input.nextWave());
    await s.progressTracker.waitFor(ctx.input.committedWritten, Math.min(15_000, attempt.deadline - Date.now()));
  }
  const queue: PlannedFault[] = plan.faults.map((f) => ({ ...f, attempt: 1 }));
  let faultsTried = 0;
  const heldThroughStalls: string[] = [];
  while (queue.length) {
    const fault = queue.shift()!;
    // Each fault's stretch: waiting for a stable group, arming, landing, and the program catching up.
    attempt.clock.enter(`fault ${++faultsTried}: ${fault.kind}${(fault.attempt ?? 1) > 1 ? ` (try ${fault.attempt})` : ''}`);
    if (Date.now() > attempt.deadline) {
      s.obligations.planEnded(fault, queue, 'time');
      break;
    }
    // A crash loop the supervisor gave up on: no fault can reach a program that does not run, and
    // restarting it for a fault would only crash it again. What it did is judged now.
    if (s.supervisor.gaveUp) {
      ctx.log.system(`The program stopped restarting (its instances exited ${MAX_SELF_RESTARTS} times in a row): the faults still planned cannot reach it, so it is judged now.`);
      s.obligations.planEnded(fault, queue, 'gone');
      break;
    }
    // Several instances: every start, exit and join is a rebalance. Arm the next fault once the
    // group is stable again, so the instance it targets owns partitions when the wave arrives.
    if (multi) await waitForStableGroup(s, Math.min(12_000, attempt.deadline - Date.now()));
    const recordedBefore = attempt.history.faults.length;
    const armedAt = Date.now();
    let outcome: FaultOutcome | void;
    try {
      outcome = await injectFault(ctx, fault, ctx.input.nextWave(owedAgain(fault)));
    } catch (err) {
      if (!(err instanceof FaultPastTimeLimit)) throw err;
      ctx.log.system(`${err.message} (a fault after the limit would only disturb what is about to be judged).`);
      s.obligations.planEnded(fault, queue, 'time');
      break;
    }
    s.liveness.faultEnded(fault.kind);
    if (fault.attempt === 1 && !fault.disturbed) s.faultsDone++;
    const records = attempt.history.faults.slice(recordedBefore);
    s.obligations.settle(fault, records, queue, waves.length > 0, lostItsChance(s, fault, armedAt, records), outcome ?? undefined);
    await s.progressTracker.waitFor(ctx.input.committedWritten, Math.min(15_000, attempt.deadline - Date.now()), () => s.liveness.stuckAgain() || s.supervisor.gaveUp);
    await s.liveness.letStallShow();
    // The unannounced kill is the grader's addition to the lab's plan (fault-plan.ts): its stretch,
    // the restart and the catching up after it, is not taken from the time the lab gives its faults.
    if (fault.unannounced) attempt.notProgramTimeMs += Date.now() - armedAt;
    // keeps-up has its evidence; a program still stuck would only let the next faults fall back.
    if (queue.length) heldThroughStalls.push(...(await restartStuck(s)));
  }
  attempt.clock.enter('remaining input');
  while (waves.length) await ctx.input.writeWave(waves.shift()!);

  attempt.phase = 'settling';
  const timedOut = !(await settle(s));
  const unfinished = timedOut ? unfinishedWork(s) : null;
  if (timedOut) ctx.log.system(`Time limit of ${Math.round(attempt.limitMs / 1000)} s reached with ${s.progressTracker.processed}/${expected} inputs processed${unfinished ? ` (${unfinished})` : ''}: verifying what is there.`);
  attempt.clock.enter('transactions held at the end');
  const heldAtEnd = [...heldThroughStalls, ...(await s.liveness.transactionsHeldAtEnd())];
  attempt.clock.enter('stopping');
  attempt.stopping = true;
  // A generous grace: a program finishing its last transaction on a busy machine must not be
  // SIGKILLed mid-transaction by us, or the hanging transaction would be blamed on it.
  await s.supervisor.stopAll(STOP_GRACE_MS);
  attempt.emitState();
  attempt.clock.enter('abandoned transactions');
  // Transactions of instances that are gone end when the coordinator aborts them: wait for that
  // (bounded) before anything is judged, and measure how long the output was held back.
  const abandoned = await ctx.cluster.maintenance.withShared(() =>
    awaitAbandonedTransactions({
      probe: s.progressTracker.probe,
      brokers: ctx.cluster.brokers,
      namespace: attempt.namespace,
      topics: s.lab.topics.filter((t) => t.role !== 'input').map((t) => ctx.cluster.realTopic(t.name)),
      system: (line) => ctx.log.system(line),
    }),
  );
  return { throughput, timedOut, unfinished, heldAtEnd, abandoned };
}

/**
 * What the program has still to do: input not yet processed, a zombie still frozen, a later stage
 * not caught up (null: it is done, and settling ends). Left when the time limit came, it means the
 * checks judged only part of its work: what it left for later (a duplicate its restarted sender
 * would write, say) was never seen.
 */
function unfinishedWork(s: PlannedPipeline): string | null {
  const progress = s.progressTracker;
  const { expected } = s.gradePlan;
  if (progress.processed < expected) return `${progress.processed} of ${expected} inputs processed`;
  if (s.supervisor.zombies.size > 0) return 'a zombie instance still frozen';
  if (!progress.settled()) return 'a later stage had not caught up with its input';
  return null;
}

/**
 * Whether the program lost its chance at an aimed fault's point between arming and firing: it
 * exited on its own (the arm died with that incarnation), or the broker was down (the fault's own
 * downtime aside). Such a fallback is not counted as a try (fault-obligations.ts).
 */
function lostItsChance(s: PlannedPipeline, fault: PlannedFault, armedAt: number, records: readonly FaultRecord[]): boolean {
  const fired = records.find((r) => r.aimedAt);
  if (!fault.points?.length || !fired) return false;
  const firedAt = Date.now() - s.attempt.elapsed() + fired.atMs;
  const exited = s.supervisor.lastSelfExitAt >= armedAt && s.supervisor.lastSelfExitAt <= firedAt;
  const brokerFault = fault.kind === 'broker-restart' || fault.kind === 'coordinator-kill';
  const m = s.nemesis.cluster.maintenance;
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
async function restartStuck(s: PlannedPipeline): Promise<string[]> {
  if (!s.liveness.stuckNow()) return [];
  const live = [...s.nemesis.program.slots].filter((slot) => slot.current.alive);
  // Our wrapper says which instance holds the open transaction; otherwise every live one.
  const holding = live.filter((slot) => slot.txnOpen);
  // A transaction held through a whole stall, with input waiting, is one the program never ends:
  // hanging, whether or not the restart comes just before the end (the broker must show it open).
  const hanging = holding.length > 0 && (await s.nemesis.cluster.brokerSaysTransactionOpen()) === true;
  const at = (s.attempt.elapsed() / 1000).toFixed(1);
  const found = hanging ? holding.map((slot) => `${slot.current.id} held a transaction open through a stall, input waiting, until the grader's liveness probe restarted it (+${at} s): it never commits or aborts it`) : [];
  const why = "stuck past keeps-up's bound with input waiting";
  for (const slot of holding.length ? holding : live) {
    s.attempt.history.mark('exit', slot.current.id, `liveness restart by the grader: ${why}`);
    await livenessRestart(s.nemesis, slot, why);
  }
  return found;
}

/** Multi-instance labs: waits until the group is Stable with one member per running slot. */
async function waitForStableGroup(s: PlannedPipeline, timeoutMs: number): Promise<void> {
  const wanted = () => [...s.nemesis.program.slots].filter((slot) => slot.current.alive).length;
  const stable = await waitForGroup(s.attempt.kafka, s.attempt.groupId, wanted, timeoutMs);
  // null: the broker may be restarting; inject the fault anyway.
  if (stable === false) s.nemesis.log.system(`the consumer group did not settle within ${(timeoutMs / 1000).toFixed(0)} s: injecting the next fault anyway`);
}

/** Waits until every committed input is accounted for, or nothing moved for a while. True if all done. */
async function settle(s: PlannedPipeline): Promise<boolean> {
  const { attempt, progressTracker: progress, nemesis: ctx } = s;
  const { expected } = s.gradePlan;
  // A seeding transaction held open (a lab's holdOpen) blocks read_committed readers until it
  // ends: nothing can be judged complete, or quiet, before then.
  await s.writer.settled();
  progress.lastActivityAt = Date.now();
  let lastHeldAt = 0;
  let overtimeSaid = false;
  while (Date.now() < attempt.deadline || overtime(s)) {
    if (!overtimeSaid && Date.now() >= attempt.deadline) {
      overtimeSaid = true;
      ctx.log.system(
        `Time limit of ${Math.round(attempt.limitMs / 1000)} s reached with ${progress.processed}/${expected} inputs processed, but the program is still keeping up (no stall): ` +
          `letting it finish, for up to ${Math.round((OVERTIME_SHARE * attempt.limitMs) / 1000)} s more.`,
      );
    }
    if (unfinishedWork(s) === null) return true;
    // Nothing runs and nothing will: the output cannot change any more.
    if (s.supervisor.gaveUp) {
      ctx.log.system(`The program stopped restarting with ${progress.processed}/${expected} inputs processed: verifying now.`);
      return true;
    }
    const laterStagesBehind = progress.staged && progress.processed >= expected && !progress.stagesCaughtUp;
    let quietMs = ctx.program.driver.quietMs(QUIET_MS, laterStagesBehind);
    // Input waiting and a live instance sitting on an open transaction, or whose consumers stopped
    // asking for records: a wedge, not the end of the work. Wait long enough for keeps-up to see it
    // as the stall it is. (Once a stall is on record, keeps-up has its evidence: no need to wait for another.)
    if (ctx.input.committedWritten > progress.processed && s.liveness.liveInstanceWedged() && !s.liveness.stallFound) quietMs = Math.max(quietMs, STALL_BOUND_MS + 1_500);
    // A broker restart (this grade's or a parallel one's) is nobody's lack of progress, nor is
    // any other hold keeps-up allows: a restart or rebalance still within the group's timeouts (a
    // JVM restarted under load takes a while), a paused instance, a stopped instance's open
    // transaction the coordinator has yet to abort. Quiet counts from the end of the hold.
    if (s.liveness.holdReason()) lastHeldAt = Date.now();
    const quietSince = Math.max(progress.lastActivityAt, ctx.cluster.maintenance.lastDowntimeEndedAt, lastHeldAt);
    // Quiet after some work: its output counts too (offsets to the wrong place never show progress).
    if (!ctx.cluster.maintenance.isDown && Date.now() - quietSince > quietMs && progress.outputSeen) {
      ctx.log.system(`No progress for ${quietMs / 1000} s with ${progress.processed}/${expected} inputs processed: verifying now.`);
      return true;
    }
    await progress.nextPoll(200);
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
function overtime(s: PlannedPipeline): boolean {
  const { attempt } = s;
  if (Date.now() >= attempt.deadline + OVERTIME_SHARE * attempt.limitMs || s.liveness.stallFound) return false;
  return (s.stallWatch.developingMs() ?? 0) <= STALL_BOUND_MS;
}
