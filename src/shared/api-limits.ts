/**
 * How much state one attempt may leave in the lab HTTP API (lab-server/api/namespace.ts): the
 * effects it applied, the idempotency keys it stored (with their answers) and the calls kept for
 * evidence, each counted and weighed. Past a bound the API answers 429 with Retry-After and applies
 * nothing, so one program cannot grow the server's heap. The defaults sit far above what any lab's
 * reference solution needs (a few thousand effects) and are a lab fact (`kafkaiq labs`).
 *
 * Pure, so the Labs page states the same numbers the server enforces.
 */
export interface ApiStateLimits {
  /** Effects applied per attempt (charges, rankings, saga steps). */
  maxEffects: number;
  /** Idempotency keys stored per attempt. */
  maxKeys: number;
  /** UTF-8 bytes of effects, stored keys and their answers together, per attempt. */
  maxBytes: number;
  /** Calls kept for evidence; the oldest are dropped (never refused). */
  maxCallsKept: number;
  /** Seconds a refused client is told to wait (Retry-After). */
  retryAfterSeconds: number;
}

export const DEFAULT_API_STATE_LIMITS: Readonly<ApiStateLimits> = Object.freeze({
  maxEffects: 50_000,
  maxKeys: 50_000,
  maxBytes: 32 * 1024 * 1024,
  maxCallsKept: 20_000,
  retryAfterSeconds: 5,
});

/** The bound as one phrase, for lab facts and the 429's message. */
export function describeApiStateLimits(limits: ApiStateLimits = DEFAULT_API_STATE_LIMITS): string {
  return `at most ${limits.maxEffects.toLocaleString('en-US')} effects, ${limits.maxKeys.toLocaleString('en-US')} idempotency keys and ${limits.maxBytes / 1024 / 1024} MB of them per attempt; past that the API answers 429 (Retry-After ${limits.retryAfterSeconds} s) and applies nothing`;
}
