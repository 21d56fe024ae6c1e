/**
 * What the transport layer (the WebSocket server, the CLI) needs from the runner. The runner core
 * knows nothing about `ws`: it reports through a SessionListener, and the transport turns each
 * call into a ServerMessage.
 */
import type { GradeReport, FaultRecord } from '../../src/shared/report.ts';
import type { Diagnostic, InspectCommand, InspectResult, ProgressMessage, StateMessage } from '../../src/shared/messages.ts';
import type { MANUAL_FAULTS } from '../../src/shared/messages.ts';

export type ManualFault = (typeof MANUAL_FAULTS)[number];

export interface SessionListener {
  output(instance: string, stream: 'stdout' | 'stderr' | 'system', line: string): void;
  diagnostics(diagnostics: Diagnostic[]): void;
  progress(progress: Omit<ProgressMessage, 'type'>): void;
  state(state: Omit<StateMessage, 'type'>): void;
  fault(fault: FaultRecord): void;
}

/** One learner (browser session): one namespace, at most one run or grade at a time. */
export interface LabSessionApi {
  /** Runs the program on a freshly seeded namespace with no faults until stop() (or its time limit). */
  run(lab: string, code: string): Promise<void>;
  /** Grades the program; resolves with the report (verdict 'error' for infrastructure trouble). */
  grade(lab: string, code: string, options: { quick: boolean; seed?: number }): Promise<GradeReport>;
  /** Stops whatever runs; resolves when every process has exited. */
  stop(): Promise<void>;
  /** Injects a fault into the current run (Run mode only). */
  fault(kind: ManualFault, instance?: string): Promise<void>;
  inspect(command: InspectCommand): Promise<InspectResult>;
  /** Stops everything and forgets the session (socket closed). */
  dispose(): Promise<void>;
}
