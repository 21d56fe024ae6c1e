/**
 * The generator of a pipeline grade: everything the seed decides, fixed before anything starts.
 * The faults (fault-plan.ts), the input transactions (seeder.ts) and the waves they are written
 * in. Pure: no broker, no program.
 */
import type { PipelineLab } from '../../../src/shared/lab.ts';
import { planFaults, type FaultPlan } from '../fault-plan.ts';
import { planSeedTransactions, splitIntoWaves, type SeedTransaction } from '../seeder.ts';

export interface GradePlan {
  readonly faults: FaultPlan;
  /** The input, in the order it is written; drawn from the seed, so it cannot be known in advance. */
  readonly transactions: readonly SeedTransaction[];
  /** Committed input records the grade writes in all. */
  readonly expected: number;
  /** The input waves still to write (play and the fault handlers take them from the front). */
  readonly waves: SeedTransaction[][];
}

export function planGrade(lab: PipelineLab, quick: boolean, seed: number): GradePlan {
  const faults = planFaults(quick ? lab.faults.quick : lab.faults.full, seed, { joinsLast: lab.instances === 1, instances: lab.instances });
  const transactions = planSeedTransactions(lab, seed);
  return { faults, transactions, expected: transactions.filter((t) => t.commit).reduce((n, t) => n + t.records.length, 0), waves: splitIntoWaves(transactions, waveCount(lab, faults)) };
}

/**
 * Waves left at or below which a fault owed again is handed its input as thinly as it can be. A
 * retried fault (a zombie that woke too late, a kill whose point came after a rebalance) takes two
 * or three waves a try, and a plan's input is fixed by its seed: one committed transaction a wave
 * near the end lets it be tried again instead of finding the input used up. Faults on their first
 * try always get whole waves, so a grade without retries writes its input as planned.
 */
export const LAST_WAVES = 2;

/**
 * Takes the next wave off the front of `waves`: the whole of it, or, for a fault owed again
 * (`thin`) with LAST_WAVES or fewer left, only its first transactions up to and including a
 * committed one, when the rest of the input still holds a committed transaction too (a wave of
 * only aborted input gives a program nothing to reach a point with). Pure.
 */
export function takeWave(waves: SeedTransaction[][], thin: boolean): SeedTransaction[] {
  const next = waves[0];
  if (!next) return [];
  if (thin && waves.length <= LAST_WAVES) {
    const firstCommitted = next.findIndex((t) => t.commit);
    const restHasCommitted = [...next.slice(firstCommitted + 1), ...waves.slice(1).flat()].some((t) => t.commit);
    if (firstCommitted >= 0 && firstCommitted < next.length - 1 && restHasCommitted) {
      waves[0] = next.slice(firstCommitted + 1);
      return next.slice(0, firstCommitted + 1);
    }
  }
  return waves.shift()!;
}

/**
 * One wave per listed fault, a spare per fault for the "after a send" fallback, one for the zombie's
 * replacement to chew on, and a last one: a fault must never find the input used up. Several
 * instances also get a warm-up wave (play.ts), and each aimed fault two spares for when it is owed
 * again (fault-obligations.ts).
 */
function waveCount(lab: PipelineLab, plan: FaultPlan): number {
  // The unannounced kill takes a wave of the spares: the listed faults' waves stay the size they
  // were planned at, whether a plan has it or not.
  const listed = plan.faults.filter((f) => !f.unannounced);
  const aimed = listed.filter((f) => f.points?.length).length;
  const zombies = listed.filter((f) => f.kind === 'zombie').length;
  return 2 * listed.length + 1 + zombies + (lab.instances > 1 ? 1 : 0) + 2 * aimed;
}
