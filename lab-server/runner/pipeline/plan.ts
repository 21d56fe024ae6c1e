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
