/**
 * no-hanging-transactions: a transaction is hanging when a live instance still holds it at the
 * end (or held it then and exited without ending it), or held it through a whole stall until the
 * grader restarted it, or when it outlived its own timeout. One a stopped instance left inside its
 * timeout otherwise is the coordinator's to end (the grader waited for that, bounded), and blocks
 * the output meanwhile (no-loss says so).
 */
import type { Checker } from './contract.ts';
import { checkResult } from './result.ts';

export const noHangingTransactions: Checker = (collected, history) => {
  const pipeline = collected.pipeline;
  if (!pipeline) return null;
  const txns = history.transactions;
  const blockedFor = txns?.blockedMs ? ` (read_committed readers were held back ${(txns.blockedMs / 1000).toFixed(1)} s by transactions of stopped instances until the coordinator aborted them)` : '';
  const failures = txns?.known ? [...txns.heldAtEnd, ...txns.outlived] : [...(txns?.heldAtEnd ?? []), ...pipeline.output.hanging];
  return checkResult(
    'no-hanging-transactions',
    failures,
    `no transaction was left open: every output LSO reached its high watermark${blockedFor}`,
    (n) => `${n} transaction${n === 1 ? ' was' : 's were'} left open (held by a live instance at the end or through a stall, or open past ${n === 1 ? 'its' : 'their'} own timeout)`,
  );
};
