/**
 * What the pipeline scenario's steps (pipeline-prepare.ts, pipeline-collect.ts) share with it:
 * the attempt, the input writer, the progress tracker and what prepare sets up.
 */
import type { PipelineLab } from '../../../src/shared/lab.ts';
import type { CrashPoint } from '../../../src/shared/report.ts';
import type { AbandonedTransactions } from './abandoned-transactions.ts';
import type { FaultObligations } from './fault-obligations.ts';
import type { StallWatch } from './stall-watch.ts';
import type { ApiNamespace } from '../../api/lab-api.ts';
import type { TransactionTimeoutWatch } from '../checkers/transaction-timeouts.ts';
import type { AttemptDatabase } from '../database-attempt.ts';
import type { AttemptLifecycle } from '../lifecycle.ts';
import type { InputWriter } from '../seeder.ts';
import type { Supervisor } from '../program/supervisor.ts';
import type { PipelineProgress } from './progress.ts';
import type { ThroughputResult } from './throughput.ts';

export interface PipelineParts {
  readonly attempt: AttemptLifecycle;
  readonly lab: PipelineLab;
  readonly writer: InputWriter;
  readonly progressTracker: PipelineProgress;
  readonly supervisor: Supervisor;
  /** Labs with an `api` block: this attempt's namespace of the lab HTTP API (lab-server/api). */
  api: ApiNamespace | null;
  /** Labs with a `database` block: the attempt's own database (DATABASE_URL). */
  database: AttemptDatabase | null;
  /** Labs with the check no-transaction-timeouts: where __transaction_state ended at the start. */
  txnTimeouts: TransactionTimeoutWatch | null;
  /** Performance labs: the burst timings, measured before the faults. */
  throughput: ThroughputResult | null;
  /** Whether settling ran into the time limit. */
  timedOut: boolean;
  /** Every crash point some incarnation of the program reached. */
  readonly reachedPoints: Set<CrashPoint>;
  /** The aimed faults still owed, and the ones that never landed. */
  readonly obligations: FaultObligations;
  /** Stretches without progress while input waited (the keeps-up check). */
  readonly stallWatch: StallWatch;
  /** Transactions live instances held open at the end of the work. */
  heldAtEnd: string[];
  /** What stopped instances left open, after the bounded wait for the coordinator. */
  abandoned: AbandonedTransactions | null;
  /** A program instance's env (TRANSACTIONAL_ID of the slot, ...). */
  env(slot: number): Record<string, string>;
  system(line: string): void;
}
