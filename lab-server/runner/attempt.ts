/**
 * The one place that picks a grader for a lab: pipelines (LabAttempt: seeded input, crash-point
 * faults, output verification) or monitors (MonitorAttempt: a live workload, look-alikes and
 * hanging transactions, alert verification). Callers (the workbench session, `kafkaiq grade` and
 * `kafkaiq check`) only see this interface.
 */
import type { GradeReport } from '../../src/shared/report.ts';
import type { ManualFault } from './contract.ts';
import { LabAttempt, type AttemptOptions } from './lab-attempt.ts';
import { MonitorAttempt } from './monitor-attempt.ts';

export type { AttemptMode, AttemptOptions, ProgramInput } from './lab-attempt.ts';

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
}

export function createAttempt(options: AttemptOptions): Attempt {
  return options.lab.definition.kind === 'monitor' ? new MonitorAttempt(options) : new LabAttempt(options);
}
