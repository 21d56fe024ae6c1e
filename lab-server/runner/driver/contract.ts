/**
 * The program driver: how the grader reaches into a running program. Instrumented (its calls are
 * seen: on the wire by the sandbox's relay, for our bundle and a `--cmd` program alike, or by our
 * client wrappers in an unsandboxed bundle; an armed crash point holds it) or opaque (a `--cmd`
 * program without a sandbox: the broker's evidence stands in). Every
 * difference between the two lives behind this interface; the sandbox plugs in here.
 */
import type { FaultKind, FaultRecord } from '../../../src/shared/report.ts';
import type { PipelineLab } from '../../../src/shared/lab.ts';
import type { ArmAction, ChildEvent } from '../program/child/protocol.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { ProgramProcess, ProgramSource } from '../program/program-instance.ts';
import type { SeedTransaction } from '../seeder.ts';
import type { Slot } from '../program/supervisor.ts';

/** A crash point the program reached; aimedAt: the logical topic the fault was aimed at (FaultSpec.topic). */
export type AimedHit = ChildEvent & {
  t: 'hit';
  aimedAt?: string;
  /** The program said "transaction open" but the broker showed no open transaction: txnOpen was set to false. */
  unconfirmed?: boolean;
};

/** The running program, as a driver sees it. */
export interface DriverProgramView {
  /** Every slot's current program, for "is any transaction open". */
  readonly slots: Iterable<Slot>;
}

/** The seeded input, and how far the program has got through it. */
export interface InputView {
  /** Committed inputs written so far. */
  readonly committedWritten: number;
  /** Committed inputs the group's offsets cover, as of the last poll. */
  readonly processed: number;
  /** `processed` as of a poll that began after this call. */
  freshProcessed(): Promise<number>;
  writeWave(wave: SeedTransaction[]): Promise<void>;
  /** The next wave of input (empty when used up); thinner near the end for a fault owed again (plan.ts). */
  nextWave(forOwedFault?: boolean): SeedTransaction[];
}

/** What a driver asks the cluster: broker truth, never the program's word. */
export interface DriverClusterView {
  realTopic(logical: string): string;
  /** Whether an output partition has an open transaction (LSO < HWM); null if the broker did not say. */
  brokerSaysTransactionOpen(): Promise<boolean | null>;
}

/** What a driver needs of the attempt it drives, grouped by role. */
export interface DriverContext {
  readonly lab: PipelineLab;
  /** The attempt's lab API (labs with an `api` block), whose base URL a path-aimed crash point is under. */
  readonly api: { readonly baseUrl: string } | null;
  readonly program: DriverProgramView;
  readonly input: InputView;
  readonly cluster: DriverClusterView;
}

/** A transaction open when a fault landed without a hit: unknown, no, yes, or yes with the producer the relay saw. */
export type OpenTransactionNow = boolean | null | { producer: string };

export interface ProgramDriver {
  readonly kind: 'instrumented' | 'opaque';
  readonly source: ProgramSource;
  /** Whether a fault of this kind is held at its crash point (aimed), or lands at a seeded moment. */
  aims(kind: FaultKind): boolean;
  /** The lab's time limit is multiplied by this. */
  readonly limitFactor: number;
  /** How long settling waits without progress before it verifies anyway. */
  quietMs(base: number, laterStagesBehind: boolean): number;
  /** Arms the fault's crash point (if the driver can), writes the wave, and waits for the program to reach it. */
  armAndWrite(ctx: DriverContext, slot: Slot, fault: PlannedFault, action: ArmAction, wave: SeedTransaction[]): Promise<{ instance: ProgramProcess; event: AimedHit | null }>;
  /**
   * Whether the slot's program holds an open transaction now (null: unknown); on the wire, the
   * producer whose transaction carries records, so a transaction opened for show is known as one.
   */
  openTransactionNow(ctx: DriverContext, slot: Slot): Promise<OpenTransactionNow>;
  /** Whether any instance holds an open transaction now (null: unknown). */
  anyTransactionOpen(ctx: DriverContext): Promise<boolean | null>;
  /** Resolves true when the instance reports a matching event, false after timeoutMs. */
  waitForEvent(instance: ProgramProcess, match: (e: ChildEvent) => boolean, timeoutMs: number): Promise<boolean>;
  /** Zombie fault: waits until the replacement has committed (and so fenced the zombie), where only the broker can tell. */
  awaitReplacementCommit(ctx: DriverContext, replacement: ProgramProcess): Promise<void>;
  /** Whether a fault provably landed inside an open transaction. */
  hitTransaction(faults: readonly FaultRecord[], abortedRecords: number): boolean;
}
