/**
 * The driver of a program whose calls are seen. In the sandbox the relay reads the program's
 * connections, whatever its language, and reports each call, whether a transaction is open, and
 * holds the message at an armed crash point (runner/wire/wire-tap.ts): our compiled bundle and a
 * `--cmd` program alike. Without a sandbox (a learner's own machine) the client wrappers inside
 * our bundle do, and a command is opaque (opaque.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CrashPoint, FaultKind, FaultRecord } from '../../../src/shared/report.ts';
import type { ArmAction, ChildEvent } from '../program/child/protocol.ts';
import { owedAgain, type PlannedFault } from '../fault-plan.ts';
import type { ProgramProcess, ProgramSource } from '../program/program-instance.ts';
import type { SeedTransaction } from '../seeder.ts';
import type { Slot } from '../program/supervisor.ts';
import type { AimedHit, DriverContext, OpenTransactionNow, ProgramDriver } from './contract.ts';

const HIT_TIMEOUT_MS = 5_000;
/** How long a program that handled the new wave may sit idle, outside a transaction, before its crash point counts as unreachable. */
const IDLE_GIVE_UP_MS = 1_500;
/**
 * How long an armed point waits for a `--cmd` program (a JVM) that has not spoken to anyone since
 * the arm: a restarted one boots and rejoins its group for seconds under load. Its hit timeout
 * starts with its first message on the wire.
 */
const COMMAND_BOOT_MS = 40_000;

export class InstrumentedDriver implements ProgramDriver {
  readonly kind = 'instrumented';
  readonly limitFactor: number;
  private readonly bootMs: number;

  constructor(readonly source: ProgramSource) {
    // A command (a JVM, say) restarts in seconds after every fault, and Kafka's copier also exits
    // whenever it reaches the end it saw at launch: it gets twice the lab's limit.
    this.limitFactor = source.kind === 'command' ? 2 : 1;
    this.bootMs = source.kind === 'command' ? COMMAND_BOOT_MS : 0;
  }

  quietMs(base: number, laterStagesBehind: boolean): number {
    // A command restarts slowly after each fault: it gets longer to show progress.
    if (this.source.kind === 'command') return 3 * base;
    // A later stage that has not caught up may be rejoining its group or restoring its state
    // after a restart (several seconds under load): give it longer.
    return laterStagesBehind ? 2 * base : base;
  }

  /**
   * Every fault with a point: a command runs in the sandbox, where the relay holds its messages and
   * answers an injected send error in the broker's place; our bundle has the wrappers besides.
   */
  aims(_kind: FaultKind): boolean {
    return true;
  }

  async armAndWrite(ctx: DriverContext, slot: Slot, fault: PlannedFault, action: ArmAction, wave: SeedTransaction[]) {
    const instance = slot.current;
    if (!fault.crashPoint || !this.aims(fault.kind)) {
      await ctx.input.writeWave(wave);
      await sleep(fault.delayMs);
      return { instance, event: null };
    }
    let waveWrittenAt = Infinity;
    const arm = { bootMs: this.bootMs };
    const aim = { topic: fault.topic, path: fault.path };
    const hit = armAt(ctx, instance, fault.crashPoint, action, fault.occurrence, aim, arm, () => waveWrittenAt);
    await ctx.input.writeWave(wave);
    waveWrittenAt = Date.now();
    let event: AimedHit | null = await hit;
    if (event && fault.topic) event = { ...event, aimedAt: fault.topic };
    // A program may never make the planned call (no transactions: no commit; no write to the
    // aimed-at topic). Every pipeline sends (a database lab's program writes rows), so fall back
    // to the moment right after any send (row write), with fresh input to reach it.
    const fallbackPoint: CrashPoint = ctx.lab.database ? 'after:db-write' : 'after:send';
    // An owed fault armed again (fault-obligations.ts) keeps its own point through the spare wave:
    // falling back to an earlier point of the same unit of work (a row write before its commit)
    // would land there again on every try, and the aimed point would never be reached. A send
    // error keeps it too: only a Produce on its way can be refused (wire-points.ts).
    const samePoint = (fault.attempt ?? 1) > 1 || action === 'error';
    if (!event && (samePoint || fault.crashPoint !== fallbackPoint || fault.topic || fault.path) && instance.alive) {
      const spare = ctx.input.nextWave(owedAgain(fault));
      if (spare.length) {
        const fallback = samePoint ? armAt(ctx, instance, fault.crashPoint, action, 1, aim, arm) : armAt(ctx, instance, fallbackPoint, action, 1, {}, arm);
        await ctx.input.writeWave(spare);
        event = await fallback;
        if (event && samePoint && fault.topic) event = { ...event, aimedAt: fault.topic };
      }
    }
    if (!event) await sleep(fault.delayMs);
    // Read on the wire, a hit's "transaction open" is already the relay's view of the instance's
    // own producer (wire-tap.ts); reported from inside the process, the broker must confirm it.
    return { instance, event: event && (instance.wireWatched ? event : await confirmedByBroker(ctx, event)) };
  }

  async openTransactionNow(_ctx: DriverContext, slot: Slot): Promise<OpenTransactionNow> {
    // On the wire: only a transaction carrying records counts, named by its producer, so a
    // transaction opened for show is judged like an aimed hit's (pipeline/collect.ts).
    const wire = slot.current.openTransactionOnWire?.();
    if (wire === undefined) return slot.txnOpen;
    return wire ? { producer: wire.transactionalId } : false;
  }

  async anyTransactionOpen(ctx: DriverContext): Promise<boolean | null> {
    return [...ctx.program.slots].some((s) => s.txnOpen);
  }

  waitForEvent(instance: ProgramProcess, match: (e: ChildEvent) => boolean, timeoutMs: number): Promise<boolean> {
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

  async awaitReplacementCommit(_ctx: DriverContext, replacement: ProgramProcess): Promise<void> {
    // The replacement's own events say when it committed (see the zombie fault), once it works: a
    // command boots for seconds first, so its first call on the wire may be that far off.
    if (this.bootMs) await this.waitForEvent(replacement, (e) => e.t === 'call', this.bootMs);
  }

  hitTransaction(faults: readonly FaultRecord[]): boolean {
    // Our wrapper tells us exactly when a fault hit an open transaction.
    return faults.some((f) => f.inTransaction === true);
  }
}

/**
 * The hit's "transaction open" comes from inside the program, which can forge it: keep it only
 * when the broker shows an open transaction at that moment (a program held at a kill or pause
 * point cannot close it meanwhile). HTTP and SQL points are judged by the point itself
 * (insideUnitOfWork), not by this flag.
 */
async function confirmedByBroker(ctx: DriverContext, event: AimedHit): Promise<AimedHit> {
  if (!event.txnOpen || /^(before|after):(http|db-write|db-commit)$/.test(event.point)) return event;
  if ((await ctx.cluster.brokerSaysTransactionOpen()) === true) return event;
  return { ...event, txnOpen: false, unconfirmed: true };
}

/** Arms a crash point and resolves with the hit, or null if the program did not reach it in time. */
function armAt(
  ctx: DriverContext,
  instance: ProgramProcess,
  point: CrashPoint,
  action: ArmAction,
  occurrence: number,
  aim: { topic?: string; path?: string },
  timing: { bootMs: number },
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
      // A program still booting (bootMs) is not yet held to the hit timeout: its first message starts it.
      if (booting) {
        booting = false;
        clearTimeout(timer);
        timer = setTimeout(giveUp, hitTimeout);
      }
      if (event.t === 'member') return;
      txnOpen = event.txnOpen;
      if (event.t === 'call' || event.t === 'failed') lastCallAt = Date.now();
      // Only the point that was armed: anything else is a forged or stray message.
      if (event.t !== 'hit' || event.point !== point || event.action !== action) return;
      cleanup();
      resolve(event);
    };
    const { topic } = aim;
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
    const hitTimeout = topic ? 2 * HIT_TIMEOUT_MS : HIT_TIMEOUT_MS;
    const giveUp = () => {
      cleanup();
      instance.send({ t: 'disarm' });
      resolve(null);
    };
    let booting = timing.bootMs > 0;
    let timer = setTimeout(giveUp, timing.bootMs + hitTimeout);
    const cleanup = () => {
      clearTimeout(timer);
      clearInterval(idleCheck);
      instance.off('event', onEvent);
      instance.off('exit', onExit);
    };
    instance.on('event', onEvent);
    instance.once('exit', onExit);
  });
  const path = aim.path && ctx.api ? `${new URL(ctx.api.baseUrl).pathname.replace(/\/$/, '')}${aim.path}` : undefined;
  instance.send({ t: 'arm', point, action, occurrence, ...(aim.topic ? { topic: ctx.cluster.realTopic(aim.topic) } : {}), ...(path ? { path } : {}) });
  return hit;
}
