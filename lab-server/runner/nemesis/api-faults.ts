/**
 * The API faults of a grade (api-slow, api-error, api-timeout): armed on the attempt's lab API
 * namespace before a wave of input is written, so they hit the program's next calls, and recorded
 * like any other fault.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiSpec } from '../../../src/shared/lab.ts';
import { isApiFault, type ApiFaultKind, type CrashPoint } from '../../../src/shared/report.ts';
import type { ApiFaultArm, ApiFaultHit, ApiNamespace } from '../../api/lab-api.ts';
import type { FaultHandler } from './context.ts';

/** How long the program has to make its next API call once the wave is written. */
const HIT_TIMEOUT_MS = 8_000;


/**
 * Crash points in an external call (an HTTP request, a SQL statement) lie inside the program's
 * unit of work even when no Kafka transaction is open: the input is read, its offsets are not
 * committed, and the external effect is about to happen or has just happened. A fault there tests
 * exactly-once as much as one inside a Kafka transaction does.
 */
export const insideUnitOfWork = (point: CrashPoint | undefined): boolean => !!point && /^(before|after):(http|db-write|db-commit)$/.test(point);

export interface ApiFaultResult {
  hit: ApiFaultHit | null;
  note: string;
}

export function armFor(kind: ApiFaultKind, spec: ApiSpec, occurrence: number): ApiFaultArm {
  const f = spec.faults;
  return {
    kind,
    calls: kind === 'api-slow' ? f.slowCalls : kind === 'api-error' ? f.errorCalls : 1,
    skip: Math.max(0, occurrence - 1),
    delayMs: f.slowMs,
    status: f.errorStatus,
    holdMs: f.timeoutHoldMs,
  };
}

/**
 * Arms the fault, writes the wave (which makes the program call the API), and waits for the first
 * call the fault hits. A fault that hit nobody in time is disarmed, and the note says so.
 */
export async function injectApiFault(ns: ApiNamespace, spec: ApiSpec, kind: ApiFaultKind, occurrence: number, writeWave: () => Promise<void>): Promise<ApiFaultResult> {
  const arm = armFor(kind, spec, occurrence);
  const hitPromise = ns.arm(arm);
  await writeWave();
  const hit = await Promise.race([hitPromise, sleep(HIT_TIMEOUT_MS, null, { ref: false })]);
  if (!hit) {
    ns.disarm();
    return { hit: null, note: `not injected: the program made no call to the API within ${HIT_TIMEOUT_MS / 1000} s` };
  }
  const call = `${hit.method} ${hit.path} ${hit.key === null ? 'without Idempotency-Key' : `with key "${hit.key}"`}`;
  const s = (ms: number) => `${(ms / 1000).toFixed(ms % 1000 ? 1 : 0)} s`;
  switch (kind) {
    case 'api-slow':
      return { hit, note: `the API answers ${arm.calls === 1 ? 'the next call' : `the next ${arm.calls} calls`} ${s(arm.delayMs)} late (work included); first: ${call}` };
    case 'api-error':
      return { hit, note: `the API answered ${arm.status} to ${arm.calls === 1 ? '' : `${arm.calls} calls, first `}${call}; nothing was applied` };
    case 'api-timeout':
      return { hit, note: `the API applied ${call} but held the answer until the client gave up (at most ${s(arm.holdMs)}, then 504)` };
  }
}

/** api-slow, api-error, api-timeout: armed on the lab API and hit by the program's next calls. */
export const apiFault: FaultHandler = async (ctx, fault, wave) => {
  const spec = ctx.lab.api;
  if (!ctx.api || !spec || !isApiFault(fault.kind)) {
    await ctx.input.writeWave(wave);
    ctx.record.fault(fault, 'api', null, null, 'skipped: this lab has no API');
    return;
  }
  const { note } = await injectApiFault(ctx.api, spec, fault.kind, fault.occurrence, () => ctx.input.writeWave(wave));
  // No Kafka transaction need be open while the program calls the API (a good program calls it
  // before the transaction opens): unknown. Kills at before:http / after:http are what prove a
  // grade conclusive (see insideUnitOfWork).
  ctx.record.fault(fault, 'api', null, null, note);
};
