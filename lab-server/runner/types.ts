/**
 * The runner's shared types, in one module every other runner file may import (and which imports
 * no runner code itself): so there is no import cycle between the attempt kinds.
 */
import type { PHASES } from '../../src/shared/messages.ts';
import type { GradeReport } from '../../src/shared/report.ts';
import type { BrokerControl } from '../broker/cluster.ts';
import type { DatabasePool } from '../db/pool.ts';
import type { AttemptDatabase } from './database-attempt.ts';
import type { LoadedLab } from '../labs/load-lab.ts';
import type { ManualFault, SessionListener } from './contract.ts';

export type AttemptMode = 'run' | 'grade' | 'quick';
export type ProgramInput = { kind: 'code'; code: string } | { kind: 'command'; command: string };
/** Where an attempt is: compiling, preparing, running (faults), settling, verifying, done. */
export type AttemptPhase = (typeof PHASES)[number];

export interface AttemptOptions {
  lab: LoadedLab;
  program: ProgramInput;
  brokers: string[];
  control: BrokerControl | null;
  /** Prefix of every topic, group and transactional id of this attempt. */
  namespace: string;
  mode: AttemptMode;
  seed?: number;
  listener: SessionListener;
  /** How long a Run may go on before it is stopped for the learner. */
  runLimitMs?: number;
  /** Where a database lab's attempt gets its database: the process's pool (DATABASE_URL) unless given. */
  databases?: DatabasePool;
}

/** What callers (the workbench session, `kafkaiq grade` and `kafkaiq check`) see of an attempt. */
export interface Attempt {
  readonly namespace: string;
  /** The consumer group the program is told to use (GROUP_ID). */
  readonly groupId: string;
  /** Env name -> real topic, for the learner's display and the terminal's inspect commands. */
  topicEnv(): Record<string, string>;
  /** Runs the program without a grade until requestStop() or the run limit. */
  run(): Promise<void>;
  grade(): Promise<GradeReport>;
  requestStop(): void;
  manualFault(kind: ManualFault, instanceId?: string): Promise<void>;
  deleteTopics(): Promise<void>;
  /** The attempt's database while it holds one (labs with a `database` block, until the attempt ends). */
  database(): AttemptDatabase | null;
}
