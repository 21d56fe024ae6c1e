/**
 * The driver of a `--cmd` program run without a sandbox (a learner's own machine), so without the
 * relay that would read its calls: no crash points. Faults land at seeded moments, and the broker tells whether a transaction was
 * open (LSO < HWM on an output partition) and whether a fault cut one short (aborted records).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultRecord } from '../../../src/shared/report.ts';
import type { ArmAction, ChildEvent } from '../program/child/protocol.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { ProgramProcess, ProgramSource } from '../program/program-instance.ts';
import type { SeedTransaction } from '../seeder.ts';
import type { Slot } from '../program/supervisor.ts';
import type { DriverContext, ProgramDriver } from './contract.ts';

/**
 * How long a fault waits for a (re)started opaque program to take up its wave: boot, rejoin, a
 * first poll. It returns as soon as a transaction opens, so a quick program never waits it out.
 * 20 s was enough at 3 grades on 2 cores; at 6 (CI's labs test) Kafka's copier, restarted after a
 * zombie, had not taken up its wave when the kill fired, and no fault of the quick plan landed
 * inside a transaction (inconclusive, bench:grader quick seed 1002).
 */
const BOOT_AND_REJOIN_MS = 40_000;
const committedRecords = (wave: readonly SeedTransaction[]) => wave.filter((t) => t.commit).reduce((n, t) => n + t.records.length, 0);

export class OpaqueDriver implements ProgramDriver {
  readonly kind = 'opaque';
  // A --cmd program (a JVM, say) restarts in seconds after every fault, and Kafka's copier also
  // exits whenever it reaches the end it saw at launch: it gets twice the lab's limit.
  readonly limitFactor = 2;

  constructor(readonly source: ProgramSource & { kind: 'command' }) {}

  aims(): boolean {
    return false;
  }

  quietMs(base: number): number {
    // A --cmd program (a JVM, say) restarts slowly after each fault: give it longer to show progress.
    return 3 * base;
  }

  async armAndWrite(ctx: DriverContext, slot: Slot, _fault: PlannedFault, _action: ArmAction, wave: SeedTransaction[]) {
    const instance = slot.current;
    // Without our wrapper the broker tells us when a transaction is open. Wait for that while the
    // program has not handled the wave yet: a JVM restarted after a fault takes seconds to boot,
    // and in a group it gets its partition only once the killed member's session has expired (10 s
    // for Kafka's copier), so a fixed short wait fired most faults into an idle process (CI: no
    // fault inside a transaction, inconclusive). A program that handled the wave before we caught
    // it in a transaction (the copier copies 20 records in well under a second) gets one more.
    // A program without transactions (a console pipe) handles both waves and gets the fault.
    let next = wave;
    for (let chance = 1; chance <= 2 && next.length; chance++) {
      const handledAt = (await ctx.input.freshProcessed()) + committedRecords(next);
      await ctx.input.writeWave(next);
      if (await this.waitForOpenTransaction(ctx, BOOT_AND_REJOIN_MS, () => ctx.input.processed >= handledAt)) break;
      if (ctx.input.processed < handledAt) break; // still not handled: the fault lands as it is
      next = ctx.input.nextWave();
    }
    return { instance, event: null };
  }

  /** Polls the output partitions until one has an open transaction (LSO < HWM), or the time is up, or `done`. */
  private async waitForOpenTransaction(ctx: DriverContext, timeoutMs: number, done: () => boolean): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until && !done()) {
      if (await ctx.cluster.brokerSaysTransactionOpen()) return true;
      await sleep(2);
    }
    return false;
  }

  openTransactionNow(ctx: DriverContext): Promise<boolean | null> {
    return ctx.cluster.brokerSaysTransactionOpen();
  }

  anyTransactionOpen(ctx: DriverContext): Promise<boolean | null> {
    return ctx.cluster.brokerSaysTransactionOpen();
  }

  /** No IPC: a short wait stands in for the event. */
  waitForEvent(_instance: ProgramProcess, _match: (e: ChildEvent) => boolean, timeoutMs: number): Promise<boolean> {
    return sleep(Math.min(timeoutMs, 1_500), true);
  }

  async awaitReplacementCommit(ctx: DriverContext, replacement: ProgramProcess): Promise<void> {
    // No IPC from a command: its commit shows as the group's offsets moving. Waking the zombie
    // before the replacement (a JVM takes seconds to start) has even fenced it would test
    // nothing, and would race two live instances instead.
    const committedBefore = await ctx.input.freshProcessed();
    const until = Date.now() + 30_000;
    while (Date.now() < until && ctx.input.processed <= committedBefore && replacement.alive) await sleep(200);
  }

  hitTransaction(faults: readonly FaultRecord[], abortedRecords: number): boolean {
    // The broker's evidence counts: records of aborted transactions in the output, which a
    // program that never aborts on its own (e.g. Kafka's copier) only leaves when a fault cut a
    // transaction short. (A fault recorded inside an open transaction counts too.)
    return faults.some((f) => f.inTransaction === true) || abortedRecords > 0;
  }
}
