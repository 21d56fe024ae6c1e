/**
 * Which attempt a piece of asynchronous work belongs to (AsyncLocalStorage: the scope follows
 * timers, sockets and promises started inside it). An exception that escapes into the event loop
 * from inside an attempt ends that attempt with an `error` verdict; the server carries on.
 * Anything outside every attempt keeps Node's own behaviour.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { describeError } from '../../src/shared/errors.ts';

export interface ScopedAttempt {
  /** Ends the attempt because of an error nobody caught. */
  fail(err: unknown): void;
}

export const attemptScope = new AsyncLocalStorage<ScopedAttempt>();

let installed = false;

/** For the long-running server: escaped errors inside an attempt end the attempt, not the process. */
export function installAttemptCrashGuard(log: (line: string) => void): void {
  if (installed) return;
  installed = true;
  const escaped = (err: unknown, origin: string) => {
    const attempt = attemptScope.getStore();
    if (!attempt) {
      // Not an attempt's: the server's own state may be broken, so stop as Node would.
      console.error(err);
      process.exit(1);
    }
    log(`an attempt failed with an uncaught ${origin}: ${describeError(err)}`);
    attempt.fail(err);
  };
  process.on('uncaughtException', (err) => escaped(err, 'exception'));
  process.on('unhandledRejection', (err) => escaped(err, 'rejection'));
}
