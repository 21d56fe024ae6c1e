/**
 * IPC between the runner and the kafkajs wrapper inside a learner's process. Kept tiny: one
 * message per instrumented kafkajs call, so the wrapper costs microseconds, not milliseconds.
 */
import type { CrashPoint } from '../../../../src/shared/report.ts';

export type InstrumentedOp = 'send' | 'sendOffsets' | 'commit' | 'abort' | 'commitOffsets'
  // SQL statements through pg (pg-shim.ts): a data-changing statement, a COMMIT.
  | 'db-write'
  | 'db-commit';

/**
 * child -> runner. `transactionalId` is set only by the relay's wire tap (runner/wire/wire-tap.ts),
 * never read from the channel (event-schema.ts refuses it): the producer a call or hit belongs to.
 */
export type ChildEvent =
  /** written: for commits, the topics the transaction wrote (which stage of a multi-stage program committed). */
  | { t: 'call'; point: CrashPoint; txnOpen: boolean; records?: number; written?: string[]; transactionalId?: string }
  | { t: 'failed'; op: InstrumentedOp; txnOpen: boolean; error: string }
  /** An armed crash point was reached; for 'kill' and 'pause' the call waits for the runner. */
  | { t: 'hit'; point: CrashPoint; action: ArmAction; txnOpen: boolean; transactionalId?: string }
  /** A consumer of the program joined its group: the grader can take a killed instance out of it. */
  | { t: 'member'; groupId: string; memberId: string };

export type ArmAction = 'kill' | 'pause' | 'stop' | 'error';

/** runner -> child */
export type RunnerCommand =
  /**
   * topic (a real topic name): only calls for writes to it count, see FaultSpec.topic. path (the
   * whole path of an API URL, the attempt's base included): only HTTP requests to it and their
   * answers count, see FaultSpec.path.
   */
  | { t: 'arm'; point: CrashPoint; action: ArmAction; occurrence: number; topic?: string; path?: string }
  | { t: 'disarm' }
  /** Sent with SIGCONT to a paused instance: let the held call go on. */
  | { t: 'continue' };

/** The env variable through which the runtime passes the lab's kafkajs defaults. */
export const DEFAULTS_ENV = 'KAFKAIQ_KAFKAJS_DEFAULTS';

/** The env variable naming the file descriptor of the runner's channel (channel.ts). */
export const CHANNEL_FD_ENV = 'KAFKAIQ_CHANNEL_FD';
