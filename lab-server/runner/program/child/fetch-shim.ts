/**
 * Crash points around HTTP calls: the kafkajs wrapper (kafkajs-shim.ts) installs this in every
 * learner program, so the grader can stop the program just before a fetch() goes out
 * (`before:http`) or just after its response arrived (`after:http`): after the API applied the
 * effect and before the program's Kafka transaction commits, the window idempotency keys exist for.
 *
 * Only the global fetch is wrapped (what learner programs use: undici, built into Node). The
 * program runs under Node's permission model with --allow-net (see program-instance.ts), so the
 * loopback call to the lab API goes through as any other connection.
 */
import type { CrashPoint } from '../../../../src/shared/report.ts';

type Checkpoint = (point: CrashPoint, txnOpen: boolean, path: string) => Promise<void>;

const WRAPPED = Symbol.for('kafkaiq.fetch-wrapped');

/** The path of fetch()'s first argument (a string, URL or Request), '' when it has none. */
function urlPath(input: unknown): string {
  try {
    const href = typeof input === 'string' ? input : input instanceof URL ? input.href : (input as { url?: unknown } | null)?.url;
    return typeof href === 'string' ? new URL(href).pathname : '';
  } catch {
    return ''; // a relative or malformed URL: fetch itself rejects it, and no armed path matches ''
  }
}

/** Replaces globalThis.fetch with one that reports before:http and after:http (once per process). */
export function instrumentFetch(checkpoint: Checkpoint, txnOpen: () => boolean): void {
  const original = globalThis.fetch as typeof fetch & { [WRAPPED]?: boolean };
  if (typeof original !== 'function' || original[WRAPPED]) return;
  const wrapped = async function fetch(input: Parameters<typeof original>[0], init?: Parameters<typeof original>[1]): Promise<Response> {
    const path = urlPath(input);
    await checkpoint('before:http', txnOpen(), path);
    // A call that throws (a timeout, a refused connection) has no response: no after:http.
    const response = await original(input, init);
    await checkpoint('after:http', txnOpen(), path);
    return response;
  };
  Object.defineProperty(wrapped, WRAPPED, { value: true });
  globalThis.fetch = wrapped as typeof fetch;
}
