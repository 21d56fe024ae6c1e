import { describeError } from '../../src/shared/errors.ts';

/** Where a failed best-effort step is told when the caller names no log of its own. */
const stderrLog = (line: string) => console.error(`[kafkaiq] ${line}`);

/**
 * Runs a step whose failure must not stop the caller (a disconnect after the task, a cleanup
 * after a run) and never throws: a failure is logged as "could not <what>: <error>". `what` is a
 * verb phrase ("disconnect a Kafka client"). Pass the step as a function, so a synchronous throw
 * is caught too, or as a promise already running.
 */
export async function bestEffort(what: string, step: PromiseLike<unknown> | (() => unknown), log: (line: string) => void = stderrLog): Promise<void> {
  try {
    await (typeof step === 'function' ? step() : step);
  } catch (err) {
    log(`could not ${what}: ${describeError(err)}`);
  }
}
