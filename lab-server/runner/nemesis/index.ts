/**
 * The nemesis: one handler per fault kind, in a table keyed by FaultKind, so a new kind is one
 * handler here and one schema entry (src/shared/report.ts FAULT_KINDS). The planned faults of a
 * pipeline grade come through injectFault; the workbench's manual faults through manual.ts, which
 * shares the handlers' primitives. 'hanging-transaction' is the monitor scenario's own: the grader
 * plays it as a producer of its own (monitor/cast.ts), not on the program.
 */
import type { FaultKind } from '../../../src/shared/report.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { SeedTransaction } from '../seeder.ts';
import { apiFault } from './api-faults.ts';
import { brokerRestartFault, coordinatorKillFault } from './broker-faults.ts';
import type { FaultHandler, FaultOutcome, NemesisContext } from './context.ts';
import { joinFault, killFault, pauseFault, sendErrorFault, stopFault, zombieFault } from './process-faults.ts';

export type PipelineFaultKind = Exclude<FaultKind, 'hanging-transaction'>;

export const FAULT_HANDLERS: Record<PipelineFaultKind, FaultHandler> = {
  kill: killFault,
  stop: stopFault,
  zombie: zombieFault,
  pause: pauseFault,
  join: joinFault,
  'send-error': sendErrorFault,
  'broker-restart': brokerRestartFault,
  'coordinator-kill': coordinatorKillFault,
  'api-slow': apiFault,
  'api-error': apiFault,
  'api-timeout': apiFault,
};

/** Injects one planned fault with the wave that makes it land. */
export function injectFault(ctx: NemesisContext, fault: PlannedFault, wave: SeedTransaction[]): Promise<FaultOutcome | void> {
  // load-lab allows 'hanging-transaction' in monitor labs only, which never come here.
  if (fault.kind === 'hanging-transaction') return Promise.resolve();
  return FAULT_HANDLERS[fault.kind](ctx, fault, wave);
}
