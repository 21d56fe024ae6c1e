/**
 * What a lab kind plugs into an attempt's lifecycle (lifecycle.ts): its scenario, the progress it
 * reports and the outcome it judged.
 */
import type { CheckResult } from '../../src/shared/report.ts';
import type { VerdictInput } from './checkers/verdict.ts';
import type { ManualFault } from './contract.ts';
import type { AttemptDatabase } from './database-attempt.ts';
import type { Supervisor } from './program/supervisor.ts';

/** What a scenario read and judged: every check it decided, how to weigh the lab's, and the output counts. */
export interface Outcome {
  /** Every check decided (the lifecycle selects the lab's, selectLabChecks). */
  checks: CheckResult[];
  /** How to weigh the lab's checks (passed in, selected and in the lab's order). */
  verdict: (checks: readonly CheckResult[]) => Omit<VerdictInput, 'checks'>;
  outputs: number;
  abortedRecords: number;
  /** Checks of the grade's integrity (output-log-intact), judged whatever the lab lists. */
  integrity?: CheckResult[];
}

export interface ProgressFigures {
  processed: number;
  expected: number;
  faultsDone: number;
  faultsPlanned: number;
}

/**
 * A lab kind's part of an attempt, in Jepsen's steps: plan (the generator), prepare the cluster,
 * play the plan (or a Run), collect what the program left and judge it (the checkers).
 */
export interface Scenario<Played = unknown> {
  /** The program's instances, once started (for restarts, self-exits and the instance list). */
  readonly supervisor: Supervisor | null;
  /** How often progress is polled and sent, and the poll itself. */
  readonly progressEveryMs: number;
  pollProgress(): Promise<void> | void;
  progress(): ProgressFigures;
  /** A grade: the seeded plan, fixed before anything starts (faults planned, for progress). */
  plan(seed: number): void;
  /** After the program compiled: topics, databases, the grader's own clients. */
  prepare(): Promise<void>;
  /** A Run: the program on fresh input, no grade, until the stop signal or the run limit. */
  playFree(): Promise<void>;
  /** A grade: the plan's input and faults, until everything settled; then every instance stopped. Returns what it learned. */
  play(): Promise<Played>;
  /** Reads what the program left (broker, database, API) and judges it, with what play learned. */
  collect(played: Played): Promise<Outcome>;
  /** The report's input and output counts; outcome null when the grade did not get that far. */
  stats(outcome: Outcome | null): { inputs: number; abortedInputs: number; outputs: number; abortedRecords: number; longestStallMs?: number; outputBlockedMs?: number };
  /** Every topic this attempt created. */
  topics(): string[];
  manualFault(kind: ManualFault, instanceId?: string): Promise<void>;
  /** Gives back everything the scenario holds (processes, clients, databases). */
  shutdown(): Promise<void>;
  /** The attempt's database while the scenario holds it (the terminal's `sql`); absent: no database. */
  database?(): AttemptDatabase | null;
}
