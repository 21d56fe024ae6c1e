/**
 * What every checker reads: the data the grade collected after the program stopped (collect/) and
 * the grade's history. A checker is a pure function of the two (index.ts has the table).
 */
import type { ApiSpec, DatabaseSpec, PipelineLab } from '../../../src/shared/lab.ts';
import type { CheckResult, FaultRecord } from '../../../src/shared/report.ts';
import type { ApiEffect } from '../../api/contract.ts';
import type { TransactionLogValue } from '../../kafka/transaction-log.ts';
import type { EffectRow } from '../database-attempt.ts';
import type { Stall } from '../pipeline/stall-watch.ts';
import type { SeededRecord } from '../seeder.ts';
import type { MonitorJudgeInput } from './monitor-alerts.ts';
import type { OutputRead, PartitionStart } from './output-read.ts';

/** What the grader read of a pipeline's results (collect/pipeline.ts). */
export interface PipelineCollected {
  readonly lab: PipelineLab;
  readonly realTopic: (logical: string) => string;
  /** Every input record the grade wrote, committed or not. */
  readonly inputs: readonly SeededRecord[];
  /** The output topics both ways, and the group's committed offsets. */
  readonly output: OutputRead;
  /** Where each output partition's log starts now. */
  readonly logStarts: readonly PartitionStart[];
  /** Labs with a database: its rows, or why they could not be read. */
  readonly database: { spec: DatabaseSpec; read: { rows: EffectRow[] } | { error: string } } | null;
  /** Labs with an API: every effect it applied in the attempt's namespace. */
  readonly api: { spec: ApiSpec; effects: readonly ApiEffect[] } | null;
  /** Labs with no-transaction-timeouts: the coordinator's log of the attempt's ids since the start. */
  readonly transactionLog: { byId: Map<string, TransactionLogValue[]> } | { error: string } | null;
  /** Performance labs: the check decided by the timed bursts before any fault. */
  readonly throughput: CheckResult | null;
}

export interface Collected {
  readonly pipeline: PipelineCollected | null;
  /** Monitoring labs: the incidents the grader caused and the alerts the program raised. */
  readonly monitor: MonitorJudgeInput | null;
}

/** What happened during the grade, as the grader recorded it. */
export interface GradeHistory {
  readonly namespace: string;
  /** Wall-clock start of the grade, to place records and faults. */
  readonly startedAt: number;
  readonly faults: readonly FaultRecord[];
  /** keeps-up's evidence: stretches without progress while input waited. */
  readonly stalls: { readonly stalls: readonly Stall[]; readonly boundMs: number; readonly longestMs: number; readonly longestEndMs?: number };
  /**
   * What the grade learned about open transactions (pipeline/abandoned-transactions.ts), or null
   * when the grade ended before that wait: then nothing tells whose transaction it is or when it
   * times out, so an LSO below the high watermark at verification counts as a hanging transaction.
   */
  readonly transactions: { heldAtEnd: string[]; outlived: string[]; insideTimeout: string[]; known: boolean; blockedMs: number } | null;
  /**
   * What the program had not finished when the time limit ended the grade ("40 of 60 inputs
   * processed"), or null when it finished: a cut-off grade judges only what it claimed done (cut-off.ts).
   */
  readonly cutOff: string | null;
}

/** A check decided from what was collected; null when the grade collected nothing it could judge. */
export type Checker = (collected: Collected, history: GradeHistory) => CheckResult | null;

/** Caches one derivation per collected object: several checks share it, each computes it at most once. */
export function memoize<T>(derive: (collected: Collected, history: GradeHistory) => T): (collected: Collected, history: GradeHistory) => T {
  const cache = new WeakMap<Collected, T>();
  return (collected, history) => {
    if (!cache.has(collected)) cache.set(collected, derive(collected, history));
    return cache.get(collected)!;
  };
}
