/**
 * What a fault handler (nemesis/*.ts) sees of the attempt, grouped by role: the program (its
 * supervisor's slots and the driver that reaches into it), the input waves, the cluster (the
 * broker's controls and what it says), the record of faults, and the log the learner reads. The
 * pipeline scenario builds it (pipeline/nemesis-context.ts); the nemesis unit tests build a fake
 * one with a fake program driver.
 */
import type { FaultRecord } from '../../../src/shared/report.ts';
import type { BrokerControl } from '../../broker/cluster.ts';
import type { MaintenanceLock } from '../../broker/maintenance.ts';
import type { TransactionCoordinator } from '../../kafka/coordinator.ts';
import type { ApiNamespace } from '../../api/lab-api.ts';
import type { AimedHit, DriverClusterView, DriverContext, DriverProgramView, InputView, OpenTransactionNow, ProgramDriver } from '../driver/contract.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { ProgramProcess } from '../program/program-instance.ts';
import type { SeedTransaction } from '../seeder.ts';
import type { Slot } from '../program/supervisor.ts';

/** The program's instances: start, stop, freeze and reach into them. */
export interface ProgramView extends DriverProgramView {
  readonly driver: ProgramDriver;
  /** The attempt is winding down: nothing restarts. */
  readonly stopping: boolean;
  slot(n: number): Slot | undefined;
  /** Starts (or restarts) a slot's program. */
  startSlot(n: number): Slot;
  /** The lowest free slot number. */
  readonly nextSlot: number;
  expectExit(instance: ProgramProcess): void;
  addZombie(instance: ProgramProcess): void;
  removeZombie(instance: ProgramProcess): void;
  /** Whether the instance reported a consumer-group membership the grader can end for it. */
  hasMemberships(instance: ProgramProcess): boolean;
  /** LeaveGroup on behalf of a killed instance (best effort, at most a few seconds). */
  removeFromGroups(instance: ProgramProcess): Promise<void>;
  /** Waits (at most timeoutMs) until the program's group is Stable with `members` members. */
  awaitStableGroup(members: number, timeoutMs: number): Promise<void>;
  /** The env of a slot's program (its TRANSACTIONAL_ID, say). */
  env(slot: number): Record<string, string>;
  /** A wedged program: waits until keeps-up has seen its stall, before a fault restarts it (liveness.ts). */
  letStallShow(): Promise<void>;
}

/** The cluster: the broker's controls and what it says. */
export interface ClusterView extends DriverClusterView {
  readonly brokers: string[];
  /** null: an external cluster (KAFKA_BROKERS), which the grader does not restart. */
  readonly control: BrokerControl | null;
  readonly maintenance: MaintenanceLock;
  findTransactionCoordinator(transactionalId: string): Promise<TransactionCoordinator>;
  /** Waits until every partition's ISR is complete again; false if not within the time. */
  waitForFullIsr(timeoutMs: number): Promise<boolean>;
  /**
   * When the coordinator may first expire a transaction open now (its start plus its own
   * transactionTimeout, the earliest of the attempt's open ones, ms since the epoch); null when
   * the broker shows none open or cannot say. Broker truth, not the program's word.
   */
  earliestTransactionExpiry(): Promise<number | null>;
}

/** Where a landed fault goes: the history, the report and the learner's terminal. */
export interface RecordView {
  fault(fault: PlannedFault, instance: string, event: (Pick<AimedHit, 'point' | 'txnOpen'> & { aimedAt?: string }) | null, txnOpen: OpenTransactionNow, note?: string): FaultRecord;
}

/** The learner's terminal and the workbench's instance list. */
export interface LogView {
  system(line: string): void;
  emitState(): void;
}

export interface NemesisContext extends DriverContext {
  readonly program: ProgramView;
  readonly input: InputView;
  readonly cluster: ClusterView;
  readonly record: RecordView;
  readonly log: LogView;
  /** Labs with an `api` block: the attempt's namespace of the lab HTTP API. */
  readonly api: ApiNamespace | null;
}

/**
 * What a handler may say about a fault that hit its point: that what the fault exists to expose did
 * not get a chance to happen (a zombie that crashed on waking, before any transactional call, never
 * showed whether it was fenced). The grade then owes the fault again (fault-obligations.ts).
 */
export interface FaultOutcome {
  withoutEffect: string;
  /**
   * How many times a fault may be armed again for this cause (default MAX_DISTURBED_TRIES): fewer
   * when the cause is the machine's pace, which another try is unlikely to change, and each try
   * spends input the faults after it need.
   */
  rearmsAtMost?: number;
}

/** One handler per fault kind: inject it (with the wave it needs to land), record it, recover. */
export type FaultHandler = (ctx: NemesisContext, fault: PlannedFault, wave: SeedTransaction[]) => Promise<FaultOutcome | void>;
