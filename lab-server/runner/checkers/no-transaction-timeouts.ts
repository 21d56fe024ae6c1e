/**
 * The check `no-transaction-timeouts`: no transaction of the program was rolled back by the
 * coordinator because it stayed open longer than its producer's transaction.timeout.ms.
 *
 * The evidence is the coordinator's own log, __transaction_state (decoded by
 * kafka/transaction-log.ts), read after the run from the offsets it had when the grade started,
 * for this attempt's transactional ids only. A timeout rollback looks like this there:
 *
 *   Ongoing (epoch e, start S)  ->  PrepareAbort (epoch e+1, start S, lastUpdate U)  ->  CompleteAbort
 *
 * with U - S >= timeoutMs: the coordinator bumped the epoch itself (a program's own abort keeps
 * its epoch) and the transaction had been open for its whole timeout. A new producer fencing an
 * open transaction (a restart after a kill) also bumps the epoch, but then the transaction is
 * younger than its timeout. A transaction left open by a grader fault (the program killed,
 * frozen, or the broker restarted while it was open) may well time out: those are not the
 * program's fault and are listed as excused, never failed.
 *
 * Why the coordinator's log rather than the program's errors: the program that timed out often
 * never sees it as such (kafkajs reports INVALID_PRODUCER_EPOCH or a fencing error, and a
 * program may swallow it), and a --cmd program has no wrapper at all. The log is the truth.
 */
import type { CheckResult, FaultRecord } from '../../../src/shared/report.ts';
import type { TransactionLogValue } from '../../kafka/transaction-log.ts';
import type { Checker } from './contract.ts';
import { capEvidence } from './evidence.ts';

/** Faults that may leave a transaction open through no fault of the program's. */
const EXCUSING_FAULTS = new Set<FaultRecord['kind']>(['kill', 'stop', 'zombie', 'pause', 'broker-restart', 'coordinator-kill']);

export interface TimedOutTransaction {
  transactionalId: string;
  producerId: bigint;
  epoch: number;
  timeoutMs: number;
  startMs: number;
  abortedAtMs: number;
  partitions: string;
}

/** Finds the timeout rollbacks in a sequence of one transactional id's log values (in log order). */
export function findTimeoutAborts(transactionalId: string, values: readonly TransactionLogValue[]): TimedOutTransaction[] {
  const found: TimedOutTransaction[] = [];
  let ongoing: TransactionLogValue | null = null;
  for (const v of values) {
    if (v.state === 'Ongoing') {
      ongoing = v;
      continue;
    }
    if (v.state === 'PrepareAbort' && ongoing && v.producerId === ongoing.producerId && v.producerEpoch > ongoing.producerEpoch && v.startMs !== null) {
      // Bumped by the coordinator: a timeout, or a new producer fencing the open transaction.
      if (v.lastUpdateMs - v.startMs >= v.timeoutMs) {
        found.push({
          transactionalId,
          producerId: v.producerId,
          epoch: ongoing.producerEpoch,
          timeoutMs: v.timeoutMs,
          startMs: v.startMs,
          abortedAtMs: v.lastUpdateMs,
          partitions: (ongoing.partitions.length ? ongoing.partitions : v.partitions).map((p) => `${p.topic}-[${p.partitions.join(',')}]`).join(' '),
        });
      }
    }
    ongoing = null; // any other state ends the open transaction
  }
  return found;
}

/**
 * no-transaction-timeouts, with evidence, from the coordinator's log (collect/transaction-log-watch.ts):
 * a pure function. `startedAt`: wall-clock start of the grade, to place times and faults.
 */
export function checkTransactionTimeouts(log: { byId: Map<string, TransactionLogValue[]> } | { error: string }, namespace: string, faults: readonly FaultRecord[], startedAt: number): CheckResult {
  if ('error' in log) {
    return {
      name: 'no-transaction-timeouts',
      passed: false,
      summary: `the grader could not read the coordinator's log (${log.error})`,
      evidence: [],
    };
  }
  const { byId } = log;
  const rel = (ms: number) => `+${((ms - startedAt) / 1000).toFixed(1)} s`;
  const strip = (name: string) => (name.startsWith(`${namespace}-`) ? name.slice(namespace.length + 1) : name);
  const failures: string[] = [];
  const excused: string[] = [];
  let transactions = 0;
  for (const [id, values] of byId) {
    transactions += values.filter((v) => v.state === 'Ongoing').length;
    for (const t of findTimeoutAborts(id, values)) {
      const line =
        `transaction of ${strip(id)} (epoch ${t.epoch}) on ${strip(t.partitions) || 'no partitions yet'}: open from ${rel(t.startMs)}, ` +
        `rolled back by the coordinator at ${rel(t.abortedAtMs)} after ${((t.abortedAtMs - t.startMs) / 1000).toFixed(1)} s, its transactionTimeout being ${(t.timeoutMs / 1000).toFixed(1)} s`;
      // A grader fault while it was open (a kill, a freeze, a broker restart) excuses it.
      const fault = faults.find((f) => EXCUSING_FAULTS.has(f.kind) && startedAt + f.atMs >= t.startMs - 1_000 && startedAt + f.atMs <= t.abortedAtMs);
      if (fault) excused.push(`${line} (excused: fault ${fault.kind} on ${fault.instance} at +${(fault.atMs / 1000).toFixed(1)} s left it open)`);
      else failures.push(line);
    }
  }
  const evidence = capEvidence(failures);
  return {
    name: 'no-transaction-timeouts',
    passed: failures.length === 0,
    summary:
      failures.length === 0
        ? `no transaction was rolled back by its timeout (${transactions} transactions in the coordinator's log${excused.length ? `; ${excused.length} left open by a fault timed out, which is not your program's doing` : ''})`
        : `${failures.length} transactions stayed open past their transactionTimeout and were rolled back by the coordinator (a slow call inside the transaction?)`,
    evidence: failures.length ? evidence : capEvidence(excused),
  };
}

export const noTransactionTimeouts: Checker = (collected, history) => {
  const log = collected.pipeline?.transactionLog;
  return log ? checkTransactionTimeouts(log, history.namespace, history.faults, history.startedAt) : null;
};
