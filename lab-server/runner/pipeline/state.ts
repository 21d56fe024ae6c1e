/**
 * What the pipeline scenario's steps (prepare.ts, play.ts, collect.ts, nemesis-context.ts) read of
 * it: the attempt, the seeded plan, what prepare set up, and the parts that watch the program. The
 * steps return what they learn (Prepared, Played) instead of writing it here.
 */
import type { PipelineLab } from '../../../src/shared/lab.ts';
import type { CrashPoint } from '../../../src/shared/report.ts';
import type { ApiNamespace } from '../../api/lab-api.ts';
import type { TransactionTimeoutWatch } from '../collect/transaction-log-watch.ts';
import type { AttemptDatabase } from '../database-attempt.ts';
import type { AttemptLifecycle } from '../lifecycle.ts';
import type { NemesisContext } from '../nemesis/context.ts';
import type { Supervisor } from '../program/supervisor.ts';
import type { InputWriter } from '../seeder.ts';
import type { AbandonedTransactions } from './abandoned-transactions.ts';
import type { FaultObligations } from './fault-obligations.ts';
import type { PipelineLiveness } from './liveness.ts';
import type { GradePlan } from './plan.ts';
import type { PipelineProgress } from './progress.ts';
import type { StallWatch } from './stall-watch.ts';
import type { ThroughputResult } from './throughput.ts';

/** What prepare set up for the attempt (prepare.ts). */
export interface Prepared {
  /** Labs with an `api` block: this attempt's namespace of the lab HTTP API (lab-server/api). */
  readonly api: ApiNamespace | null;
  /** Labs with a `database` block: the attempt's own database (DATABASE_URL). */
  readonly database: AttemptDatabase | null;
  /** Labs with the check no-transaction-timeouts: where __transaction_state ended at the start. */
  readonly txnTimeouts: TransactionTimeoutWatch | null;
}

export const NOTHING_PREPARED: Prepared = { api: null, database: null, txnTimeouts: null };

/** What playing the plan learned (play.ts), for collect. */
export interface Played {
  /** Performance labs: the burst timings, measured before the faults. */
  readonly throughput: ThroughputResult | null;
  /** Whether settling ran into the time limit. */
  readonly timedOut: boolean;
  /** What the program had not finished when the time limit ended the grade (null: it had finished, or went quiet). */
  readonly unfinished: string | null;
  /** Transactions live instances held open at the end of the work. */
  readonly heldAtEnd: string[];
  /** What stopped instances left open, after the bounded wait for the coordinator. */
  readonly abandoned: AbandonedTransactions | null;
}

export interface PipelineState {
  readonly attempt: AttemptLifecycle;
  readonly lab: PipelineLab;
  readonly writer: InputWriter;
  readonly progressTracker: PipelineProgress;
  readonly supervisor: Supervisor;
  readonly liveness: PipelineLiveness;
  /** Stretches without progress while input waited (the keeps-up check). */
  readonly stallWatch: StallWatch;
  /** The aimed faults still owed, and the ones that never landed. */
  readonly obligations: FaultObligations;
  /** Every crash point some incarnation of the program reached. */
  readonly reachedPoints: Set<CrashPoint>;
  /** Transactional ids that committed a transaction carrying records, as the relay read it on the wire. */
  readonly committingProducers: Set<string>;
  readonly prepared: Prepared;
  /** What the fault handlers and the driver see (nemesis-context.ts). */
  readonly nemesis: NemesisContext;
  /** Planned faults injected so far (the progress bar's count; retries of owed faults excluded). */
  faultsDone: number;
  /** A program instance's env; another namespace (the throughput measurement) moves topics, group and ids there. */
  env(slot: number, namespace?: string): Record<string, string>;
}

/** The plan a grade plays; play and collect run only after plan(). */
export interface PlannedPipeline extends PipelineState {
  readonly gradePlan: GradePlan;
}
