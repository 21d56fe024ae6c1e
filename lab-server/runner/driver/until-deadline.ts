/**
 * No fault fires once the grade's time limit has passed. A fault whose crash point was not reached
 * in time would otherwise fire by fallback after the limit, on the program as it is about to be
 * judged: a kill then restarts it, and the restart's InitProducerId aborts the very transaction the
 * verdict is about (a program that never commits looked clean, as if it had not left one hanging).
 * The time limit ends the plan (fault-obligations.ts records what was still owed).
 */
import { KafkaIqError } from '../../../src/shared/errors.ts';
import type { PlannedFault } from '../fault-plan.ts';
import type { ProgramDriver } from './contract.ts';

/** The fault was armed before the time limit, but its point was not reached before it passed. */
export class FaultPastTimeLimit extends KafkaIqError {
  constructor(readonly fault: PlannedFault) {
    super('TIMEOUT', `the time limit passed before the ${fault.kind} fault reached its point: it does not fire`);
  }
}

/** The driver as it is, except that armAndWrite throws FaultPastTimeLimit instead of letting a late fallback fire. */
export function untilDeadline(driver: ProgramDriver, deadline: () => number): ProgramDriver {
  const armAndWrite: ProgramDriver['armAndWrite'] = async (ctx, slot, fault, action, wave) => {
    const armed = await driver.armAndWrite(ctx, slot, fault, action, wave);
    // A point that was hit has the program waiting at it: the fault must go through.
    if (!armed.event && Date.now() > deadline()) throw new FaultPastTimeLimit(fault);
    return armed;
  };
  return new Proxy(driver, {
    get(target, property) {
      if (property === 'armAndWrite') return armAndWrite;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
