/** Faults of the program's processes: kill, stop, zombie, pause, join, send-error. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ArmAction, ChildEvent } from '../program/child/protocol.ts';
import { owedAgain, type PlannedFault } from '../fault-plan.ts';
import type { SeedTransaction } from '../seeder.ts';
import type { ProgramProcess } from '../program/program-instance.ts';
import type { Slot } from '../program/supervisor.ts';
import type { FaultHandler, NemesisContext } from './context.ts';

const target = (ctx: NemesisContext, n: number) => ctx.program.slot(n) ?? ctx.program.slot(1)!;

/** What the report says of the unannounced kill (fault-plan.ts). */
const UNANNOUNCED_NOTE = "unannounced: at a seeded moment after its wave, in no lab's list and aimed at no point";

/**
 * Tries again for a zombie that woke after its transaction's timeout (fault-obligations.ts): its
 * replacement took longer to take over than the program lets a transaction stay open. Once may be a
 * passing slowness; twice is this machine's pace, and each try spends input later faults need.
 */
export const LATE_WAKE_REARMS = 1;

/** How long a kill waits for the other instances to take the dead one's partitions over. */
const SURVIVORS_TAKE_OVER_MS = 8_000;

/**
 * Arms the fault's point and writes its wave. A fault firing by fallback at a program that wedged
 * while it waited (a kill, a stop, a replacement that fences it) would heal the wedge before
 * keeps-up saw it: the stall is let show first.
 */
async function armFault(ctx: NemesisContext, slot: Slot, fault: PlannedFault, action: ArmAction, wave: SeedTransaction[]) {
  // The unannounced kill is armed nowhere: its wave, then its seeded moment (fault-plan.ts).
  if (fault.unannounced) {
    await ctx.input.writeWave(wave);
    await sleep(fault.delayMs);
    return { instance: slot.current, event: null };
  }
  const landed = await ctx.program.driver.armAndWrite(ctx, slot, fault, action, wave);
  if (!landed.event) await ctx.program.letStallShow();
  return landed;
}

/** SIGKILL at the crash point, then a restart with the same identity. */
export const killFault: FaultHandler = async (ctx, fault, wave) => {
  const slot = target(ctx, fault.instance);
  const { instance, event } = await armFault(ctx, slot, fault, 'kill', wave);
  ctx.program.expectExit(instance);
  instance.signal('SIGKILL');
  await instance.exited;
  const open = event ? null : await ctx.program.driver.openTransactionNow(ctx, slot);
  // When sent, the report says so, so the quick rejoin in the timeline does not teach a wrong
  // lesson. During a broker restart (another grade's) it is sent once the broker is back: the
  // restarted coordinator reloads the dead member and waits out its session timeout again.
  const leaves = ctx.program.hasMemberships(instance);
  const notes = [fault.unannounced ? UNANNOUNCED_NOTE : '', leaves ? 'the grader sends the LeaveGroup it could not: no wait for its session timeout' : ''].filter(Boolean);
  ctx.record.fault(fault, instance.id, event, open, notes.length ? notes.join('; ') : undefined);
  if (leaves) await ctx.program.removeFromGroups(instance);
  // Other instances still running (a multi-instance lab, or one that joined): as a crashed pod is
  // rescheduled only after a while, they take its partitions over before it comes back. A program
  // that hands partitions over badly (positions read only at start-up) then always shows it; with
  // an instant restart the dead one's successor often got its own partitions back first.
  const survivors = [...ctx.program.slots].filter((s) => s !== slot && s.current.alive).length;
  if (leaves && survivors > 0 && !ctx.cluster.maintenance.isDown) await ctx.program.awaitStableGroup(survivors, SURVIVORS_TAKE_OVER_MS);
  ctx.program.startSlot(slot.slot);
};

/**
 * Not a planned fault: what an orchestrator's liveness probe does to a process that stopped making
 * progress (SIGKILL, then a restart with the same identity). The grade calls it only after keeps-up
 * has recorded the stall, so the finding is on record before the evidence is cleared.
 */
export async function livenessRestart(ctx: NemesisContext, slot: Slot, why: string): Promise<void> {
  const instance = slot.current;
  ctx.log.system(`${instance.id} is ${why}: the grader restarts it, as a liveness probe would, so the faults still owed reach a running program.`);
  ctx.program.expectExit(instance);
  instance.signal('SIGKILL');
  await instance.exited;
  if (ctx.program.hasMemberships(instance)) await ctx.program.removeFromGroups(instance);
  ctx.program.startSlot(slot.slot);
}

/** SIGTERM at the crash point (a clean shutdown), then a restart. */
export const stopFault: FaultHandler = async (ctx, fault, wave) => {
  const slot = target(ctx, fault.instance);
  const { instance, event } = await armFault(ctx, slot, fault, 'stop', wave);
  const open = event ? event.txnOpen : await ctx.program.driver.openTransactionNow(ctx, slot);
  ctx.program.expectExit(instance);
  ctx.record.fault(fault, instance.id, event, open);
  await instance.stop(5_000);
  ctx.program.startSlot(slot.slot);
};

/** SIGSTOP at the crash point, a replacement with the same identity, then the frozen one resumes. */
export const zombieFault: FaultHandler = async (ctx, fault, wave) => {
  const slot = target(ctx, fault.instance);
  const { instance, event } = await armFault(ctx, slot, fault, 'pause', wave);
  instance.pause();
  ctx.program.addZombie(instance);
  // Frozen longer than its own transactionTimeout, the zombie wakes to a transaction the broker
  // has already aborted: that failure is the timeout's doing, not fencing. Asked now, while the
  // transaction is still open; answered while the replacement starts.
  const expiry = event?.txnOpen && ctx.program.driver.kind === 'instrumented' ? ctx.cluster.earliestTransactionExpiry() : Promise.resolve(null);
  // A frozen member sends no heartbeat, and the replacement's join would wait out its session
  // timeout before the group hands the replacement any partition. The grader sends the LeaveGroup
  // now, as that timeout would: the zombie wakes to the same state either way (out of the group,
  // its producer fenced by the replacement's), only sooner (during a broker restart: once the
  // broker is back, see killFault).
  const leaves = ctx.program.hasMemberships(instance);
  const note = `paused; a replacement with the same identity starts${leaves ? '; the grader sends the LeaveGroup the frozen one cannot: no wait for its session timeout' : ''}`;
  ctx.record.fault(fault, instance.id, event, event ? null : await ctx.program.driver.openTransactionNow(ctx, slot), note);
  if (leaves) await ctx.program.removeFromGroups(instance);
  const replacement = ctx.program.startSlot(slot.slot).current;
  // New input, so the replacement has work of its own while the zombie is frozen mid-transaction.
  await ctx.input.writeWave(ctx.input.nextWave(owedAgain(fault)));
  // Resume the zombie once the replacement has redone work: its first commit, or (for a
  // program without transactions) its first sends plus a moment.
  // When the zombie was frozen in one stage (an aimed crash point), wait for the replacement's
  // commit in that stage: only then has its producer fenced the zombie's, whose next call
  // then fails. (Another stage of a multi-stage program may commit long before.)
  const aimed = event?.aimedAt ? ctx.cluster.realTopic(event.aimedAt) : null;
  await ctx.program.driver.awaitReplacementCommit(ctx, replacement);
  const sent = await ctx.program.driver.waitForEvent(replacement, (e) => e.t === 'call' && (e.point === 'after:commit' || e.point === 'after:send'), 20_000);
  if (sent) {
    await ctx.program.driver.waitForEvent(replacement, (e) => e.t === 'call' && e.point === 'after:commit' && (!aimed || (e.written ?? []).includes(aimed)), aimed ? 8_000 : 1_500);
  }
  ctx.log.system(`${instance.id} (the zombie) resumes`);
  const effect = watchJudgedCalls(instance);
  const resumedAt = Date.now();
  instance.resume();
  const exited = await Promise.race([instance.exited.then(() => true), sleep(4_000, false)]);
  // The channel's last events may be read just after the exit is seen.
  if (exited && !effect.judged()) await sleep(300);
  effect.stop();
  if (!exited) {
    ctx.log.system(`${instance.id} (the zombie) is still running 4 s after it woke: stopping it, since its replacement now has its identity.`);
    await instance.stop(2_000);
  }
  ctx.program.removeZombie(instance);
  // Only our wrapper reports calls: an opaque program's zombie is taken as it comes.
  if (ctx.program.driver.kind !== 'instrumented') return;
  if (exited && !effect.judged()) {
    return { withoutEffect: `${instance.id} (the zombie) exited on waking before the broker judged any call of it (${effect.lastError() ?? 'no transactional call'}): whether it was fenced was never shown` };
  }
  const expiresAt = await expiry;
  if (effect.firstVerdict() === 'refused' && expiresAt !== null && resumedAt >= expiresAt) {
    const late = ((resumedAt - expiresAt) / 1000).toFixed(1);
    return {
      withoutEffect: `${instance.id} (the zombie) woke ${late} s after its transaction's own transactionTimeout had run out, so the broker had already aborted it: its refused call says nothing about fencing`,
      rearmsAtMost: LATE_WAKE_REARMS,
    };
  }
};

/**
 * Errors from a broker the zombie could not reach or that was not ready (a broker restart while it
 * slept closes its connections and reloads the coordinator): the broker never judged the call, so
 * they say nothing about fencing. Any other failure (a fenced producer, an old epoch, a stale
 * generation) is the broker's verdict on the zombie.
 */
const UNJUDGED = /closed connection|connection (?:error|closed|refused|reset)|ECONNREFUSED|ECONNRESET|EPIPE|socket hang ?up|coordinator is loading|not the (?:correct )?coordinator|COORDINATOR_(?:LOAD_IN_PROGRESS|NOT_AVAILABLE)|NOT_COORDINATOR|timed? ?out|broker not (?:connected|available)|leader not available|not leader/i;

/**
 * Watches a resumed zombie for the first call the broker judged: one that went through (an after:
 * point), or one the broker refused (its verdict: fenced, an old epoch, a stale generation).
 */
function watchJudgedCalls(instance: ProgramProcess) {
  let verdict: 'through' | 'refused' | null = null;
  let lastError: string | null = null;
  const onEvent = (e: ChildEvent) => {
    if (verdict) return;
    if (e.t === 'call' && e.point.startsWith('after:')) verdict = 'through';
    else if (e.t === 'failed' && UNJUDGED.test(e.error)) lastError = `${e.op} failed: ${e.error.slice(0, 120)}`;
    else if (e.t === 'failed') verdict = 'refused';
  };
  instance.on('event', onEvent);
  return { judged: () => verdict !== null, firstVerdict: () => verdict, lastError: () => lastError, stop: () => void instance.off('event', onEvent) };
}

/**
 * Freeze the instance at the crash point (mid-transaction) and start NO replacement: the
 * group's session timeout expires and the other instances take over its partitions and
 * redo the frozen batch. Then it wakes up, still holding that transaction, as a rebalanced-
 * away zombie does in production. Only fencing through the transactional.id of the
 * partition can stop its commit (kafkajs's sendOffsets carries no group generation).
 */
export const pauseFault: FaultHandler = async (ctx, fault, wave) => {
  const slot = target(ctx, fault.instance);
  const { instance, event } = await armFault(ctx, slot, fault, 'pause', wave);
  instance.pause();
  ctx.log.emitState();
  ctx.record.fault(fault, instance.id, event, event ? null : slot.txnOpen, 'paused (SIGSTOP) past its session timeout, no replacement: the group hands its partitions to the other instances');
  await waitWhilePaused(ctx, instance, owedAgain(fault));
  ctx.log.system(`${instance.id} resumes (SIGCONT) and carries on where it froze; from here on it is a normal group member again`);
  instance.resume();
  ctx.log.emitState();
  // Let the held transaction play out (its commit goes through, or fails because it was
  // fenced) before the next fault is armed: a crash point armed now would catch the zombie's
  // own commit and hide what it does. A program without transactions is done at its next call.
  const settled = (e: ChildEvent) => (e.t === 'call' && (e.point === 'after:commit' || e.point === 'after:abort' || !e.txnOpen)) || (e.t === 'failed' && e.op !== 'commitOffsets');
  await Promise.race([ctx.program.driver.waitForEvent(instance, settled, 5_000), instance.exited]);
};

/**
 * A 'pause' fault holds its instance frozen until the group has expired its session and the
 * other instances have committed every input written so far (the frozen batch included, so its
 * records have been redone elsewhere, and a wave written as it froze). Bounded, for a program that
 * never gets there: a single instance, or a session timeout longer than the grader can wait.
 */
async function waitWhilePaused(ctx: NemesisContext, frozen: ProgramProcess, owed: boolean): Promise<void> {
  const session = Math.min(ctx.lab.kafkajs.consumer.sessionTimeout ?? 30_000, 15_000);
  const started = Date.now();
  // A wave of new input on every partition as the instance freezes, the frozen one's included:
  // its new owner must read there, and so registers that partition's transactional id and fences
  // the zombie, even when the frozen batch's offsets were already committed (a program that
  // commits them before its transaction would otherwise find nothing to read, fence nobody, and
  // the zombie's commit would go through). Written now, not after the session timeout, it is read
  // with the frozen batch when the partitions move: the freeze lasts no longer for it.
  const extra = ctx.input.nextWave(owed);
  if (extra.length) await ctx.input.writeWave(extra);
  const target = ctx.input.committedWritten;
  // Nobody can take the partitions over before the session timeout: no need to look earlier.
  await sleep(Math.max(0, session - (Date.now() - started)));
  while (frozen.alive && Date.now() - started < session + 12_000 && ctx.input.processed < target) await sleep(100);
  if (ctx.input.processed < target) {
    ctx.log.system(`the other instances did not take over ${frozen.id}'s work within ${((Date.now() - started) / 1000).toFixed(1)} s (${ctx.input.processed}/${target} inputs committed)`);
  } else {
    ctx.log.system(`the other instances took over ${frozen.id}'s partitions and committed every input so far (${((Date.now() - started) / 1000).toFixed(1)} s frozen)`);
  }
}

/** A new instance joins the group (a rebalance). */
export const joinFault: FaultHandler = async (ctx, fault, wave) => {
  const next = ctx.program.nextSlot;
  await ctx.input.writeWave(wave);
  await sleep(fault.delayMs);
  ctx.record.fault(fault, `i${next}`, null, [...ctx.program.slots].some((s) => s.txnOpen), 'a new instance joins the group');
  ctx.program.startSlot(next);
};

/** The next send fails as during a leader change. */
/** What the learner reads of a send error: in the sandbox the relay refused the Produce; outside it, the client wrapper failed the call. */
const sendErrorNote = (instance: ProgramProcess) =>
  instance.wireWatched
    ? 'the broker refused the batch (INVALID_RECORD, a final error): the grader answered that Produce in its place, so nothing of it was written'
    : 'the send failed as if the partition leader had moved';

export const sendErrorFault: FaultHandler = async (ctx, fault, wave) => {
  const slot = target(ctx, fault.instance);
  const { instance, event } = await ctx.program.driver.armAndWrite(ctx, slot, fault, 'error', wave);
  if (event) ctx.record.fault(fault, instance.id, event, null, sendErrorNote(instance));
  else if (!ctx.program.driver.aims(fault.kind)) ctx.record.fault(fault, instance.id, null, slot.txnOpen, 'not injected: a command run outside the sandbox has no relay to refuse its send');
  else ctx.record.fault(fault, instance.id, null, slot.txnOpen, 'not injected: the program made no send in time');
};
