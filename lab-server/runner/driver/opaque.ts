/**
 * The driver of a `--cmd` program (Kafka's TransactionalMessageCopier, a JVM): no wrapper, no IPC,
 * no crash points. Faults land at seeded moments, and the broker tells whether a transaction was
 * open (LSO < HWM on an output partition) and whether a fault cut one short (aborted records).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultRecord } from '../../../src/shared/report.ts';
import type { ArmAction, ChildEvent } from '../child/protocol.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { ProgramProcess, ProgramSource } from '../program-instance.ts';
import type { SeedTransaction } from '../seeder.ts';
import type { Slot } from '../supervisor.ts';
import type { DriverContext, ProgramDriver } from './contract.ts';

export class OpaqueDriver implements ProgramDriver {
  readonly kind = 'opaque';
  // A --cmd program (a JVM, say) restarts in seconds after every fault, and Kafka's copier also
  // exits whenever it reaches the end it saw at launch: it gets twice the lab's limit.
  readonly limitFactor = 2;
  /** Whether the program was ever caught with a transaction open. */
  private transactionsSeen = false;

  constructor(readonly source: ProgramSource & { kind: 'command' }) {}

  quietMs(base: number): number {
    // A --cmd program (a JVM, say) restarts slowly after each fault: give it longer to show progress.
    return 3 * base;
  }

  async armAndWrite(ctx: DriverContext, slot: Slot, _fault: PlannedFault, _action: ArmAction, wave: SeedTransaction[]) {
    const instance = slot.current;
    await ctx.writeWave(wave);
    // Without our wrapper the broker tells us when a transaction is open. A program may have
    // finished the wave before we looked (Kafka's copier copies 20 records in well under a
    // second), or still be starting (a JVM): then fresh input gives it another. (Only for a
    // program seen in a transaction before, or one that has processed nothing yet, so may still
    // be booting: on a loaded machine a JVM can take longer than the first fault's wait, and a
    // driver that then gave up on it missed every later fault too (CI, seed 1611549918: no fault
    // inside a transaction, inconclusive). A program without transactions, a console pipe say,
    // has processed input by then and is not waited for again.)
    if (!(await this.waitForOpenTransaction(ctx, 3_000)) && (this.transactionsSeen || ctx.processed === 0)) {
      const spare = ctx.nextWave();
      if (spare.length) await ctx.writeWave(spare);
      await this.waitForOpenTransaction(ctx, spare.length ? 8_000 : 2_000);
    }
    return { instance, event: null };
  }

  /** Polls the output partitions until one has an open transaction (LSO < HWM), or the time is up. */
  private async waitForOpenTransaction(ctx: DriverContext, timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      if (await this.lookForOpenTransaction(ctx)) return true;
      await sleep(2);
    }
    return false;
  }

  openTransactionNow(ctx: DriverContext): Promise<boolean | null> {
    return this.lookForOpenTransaction(ctx);
  }

  anyTransactionOpen(ctx: DriverContext): Promise<boolean | null> {
    return this.lookForOpenTransaction(ctx);
  }

  /** Asks the broker, and remembers a program caught in a transaction whoever asked. */
  private async lookForOpenTransaction(ctx: DriverContext): Promise<boolean | null> {
    const open = await ctx.brokerSaysTransactionOpen();
    if (open === true) this.transactionsSeen = true;
    return open;
  }

  /** No IPC: a short wait stands in for the event. */
  waitForEvent(_instance: ProgramProcess, _match: (e: ChildEvent) => boolean, timeoutMs: number): Promise<boolean> {
    return sleep(Math.min(timeoutMs, 1_500), true);
  }

  async awaitReplacementCommit(ctx: DriverContext, replacement: ProgramProcess): Promise<void> {
    // No IPC from a command: its commit shows as the group's offsets moving. Waking the zombie
    // before the replacement (a JVM takes seconds to start) has even fenced it would test
    // nothing, and would race two live instances instead.
    const committedBefore = await ctx.freshProcessed();
    const until = Date.now() + 30_000;
    while (Date.now() < until && ctx.processed <= committedBefore && replacement.alive) await sleep(200);
  }

  hitTransaction(faults: readonly FaultRecord[], abortedRecords: number): boolean {
    // The broker's evidence counts: records of aborted transactions in the output, which a
    // program that never aborts on its own (e.g. Kafka's copier) only leaves when a fault cut a
    // transaction short. (A fault recorded inside an open transaction counts too.)
    return faults.some((f) => f.inTransaction === true) || abortedRecords > 0;
  }
}
