/** The lab HTTP API's types, shared by the service (namespace.ts, lab-api.ts) and the grader's checkers. */
import type { ApiFaultKind } from '../../src/shared/report.ts';

export type { ApiFaultKind };
export type ApiService = 'payments' | 'rankings' | 'saga';

/** One effect the API applied: a charge made, a ranking written. Replays are not effects. */
export interface ApiEffect {
  /** Order of application within the namespace, from 1. */
  seq: number;
  /** Wall-clock time (ms since the epoch) the effect was applied. */
  at: number;
  service: ApiService;
  method: string;
  path: string;
  /** The Idempotency-Key it came with, or null. */
  key: string | null;
  /** What the effect is about: the paymentId, `<campaignId>|<windowStart>|<windowEnd>`, or a saga step's `<step>:<orderId>`. */
  id: string;
  /** The validated request body (for PUT /rankings, the ranking as a whole). */
  body: Record<string, unknown>;
  /** False for an upsert that wrote the value the ranking already had. */
  changed: boolean;
}

export type CallOutcome =
  | 'applied'
  /** Answered without an effect: a declined card (402), a release with nothing reserved. */
  | 'refused'
  | 'replayed'
  | 'in-progress'
  | 'key-reused'
  | 'invalid'
  | 'injected-error'
  | 'answer-lost'
  | 'read'
  | 'not-found'
  /** Refused with 429: the namespace holds as many effects, keys or bytes as it may (src/shared/api-limits.ts). */
  | 'over-limit';

/** Every request the namespace answered (or gave up answering), for evidence and debugging. */
export interface ApiCall {
  seq: number;
  at: number;
  method: string;
  path: string;
  key: string | null;
  status: number | null;
  outcome: CallOutcome;
  fault?: ApiFaultKind;
  answeredAt?: number;
}

/** What the grader arms: the next `calls` eligible calls (after skipping `skip`) get the fault. */
export interface ApiFaultArm {
  kind: ApiFaultKind;
  /** How many calls the fault affects (api-slow, api-error); api-timeout holds one answer. */
  calls: number;
  /** Eligible calls to let through before the first affected one (occurrence - 1). */
  skip: number;
  /** api-slow: how long each affected answer is delayed. */
  delayMs: number;
  /** api-error: the status answered. */
  status: number;
  /** api-timeout: the longest the answer is held for a client that keeps waiting; then a 504. */
  holdMs: number;
}

/** The first call an armed fault hit. */
export interface ApiFaultHit {
  kind: ApiFaultKind;
  method: string;
  path: string;
  key: string | null;
  at: number;
}


/** A JSON value as one string, keys sorted: two bodies are the same request when these match. */
export const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
};
