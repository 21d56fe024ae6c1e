/**
 * The checkers, one per check name: pure functions of what the grade collected and its history
 * (contract.ts), one file each, named like the check. A new check is a name in src/shared/report.ts
 * CHECK_NAMES and a row here; the compiler refuses a name without its checker.
 */
import type { CheckName, CheckResult } from '../../../src/shared/report.ts';
import { atomicFanOut } from './atomic-fan-out.ts';
import type { Checker, Collected, GradeHistory } from './contract.ts';
import { effectsCorrect } from './effects-correct.ts';
import { hangingTransactionReported } from './hanging-transaction-reported.ts';
import { keepsUp } from './keeps-up.ts';
import { noAbortedReads } from './no-aborted-reads.ts';
import { noDuplicateEffects } from './no-duplicate-effects.ts';
import { noDuplicates } from './no-duplicates.ts';
import { noFalseAlarms } from './no-false-alarms.ts';
import { noHangingTransactions } from './no-hanging-transactions.ts';
import { noLoss } from './no-loss.ts';
import { noLostEffects } from './no-lost-effects.ts';
import { noTransactionTimeouts } from './no-transaction-timeouts.ts';
import { offsetsConsistent } from './offsets-consistent.ts';
import { orderPreserved } from './order-preserved.ts';
import { outputLogIntact } from './output-log-intact.ts';
import { sagaOutcome } from './saga-outcome.ts';
import { throughputSpeedup } from './throughput-speedup.ts';
import { transformCorrect } from './transform-correct.ts';

export const CHECKERS: Record<CheckName, Checker> = {
  'no-loss': noLoss,
  'no-duplicates': noDuplicates,
  'no-aborted-reads': noAbortedReads,
  'transform-correct': transformCorrect,
  'order-preserved': orderPreserved,
  'atomic-fan-out': atomicFanOut,
  'offsets-consistent': offsetsConsistent,
  'no-hanging-transactions': noHangingTransactions,
  'hanging-transaction-reported': hangingTransactionReported,
  'no-false-alarms': noFalseAlarms,
  'throughput-speedup': throughputSpeedup,
  'no-duplicate-effects': noDuplicateEffects,
  'no-lost-effects': noLostEffects,
  'effects-correct': effectsCorrect,
  'no-transaction-timeouts': noTransactionTimeouts,
  'keeps-up': keepsUp,
  'output-log-intact': outputLogIntact,
  'saga-outcome': sagaOutcome,
};

/**
 * Decides the named checks, in the given order, and only those. A check whose data the grade did
 * not collect is a failed check saying so, never a silent omission: zero checks is never a pass.
 */
export function runCheckers(names: readonly CheckName[], collected: Collected, history: GradeHistory): CheckResult[] {
  return names.map(
    (name) => CHECKERS[name](collected, history) ?? { name, passed: false, summary: `the grader collected nothing to judge ${name} on in this kind of lab`, evidence: [] },
  );
}
