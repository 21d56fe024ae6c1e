import { setTimeout as sleep } from 'node:timers/promises';

export interface RetryOptions {
  /** Attempts after the first one. */
  retries: number;
  minDelayMs?: number;
  maxDelayMs?: number;
  factor?: number;
  /** Return false to stop retrying at once (a permanent error): the error is rethrown. */
  shouldRetry?: (err: unknown, attempt: number) => boolean;
  /** Stops waiting between attempts when aborted. */
  signal?: AbortSignal;
  /** No further attempt once this long has passed since the first one: the last error is rethrown. */
  timeoutMs?: number;
}

/** The one retry helper: exponential backoff with jitter and a bail-out. */
export async function retry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const { retries, minDelayMs = 100, maxDelayMs = 2_000, factor = 2, shouldRetry = () => true, signal, timeoutMs = Infinity } = options;
  const until = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt >= retries || !shouldRetry(err, attempt) || signal?.aborted || Date.now() >= until) throw err;
      const base = Math.min(maxDelayMs, minDelayMs * factor ** attempt);
      await sleep(base / 2 + Math.random() * (base / 2), undefined, { signal });
    }
  }
}
