/**
 * The effect checks of labs with an `api` block: what the lab API applied, compared with what the
 * committed inputs ask for. no-duplicate-effects and no-lost-effects come from checkEffects (shared
 * with the database labs); effects-correct compares the bodies.
 */
import type { ApiSpec, ExpectedApiEffect } from '../../../src/shared/lab.ts';
import type { CheckResult, FaultRecord } from '../../../src/shared/report.ts';
import { checkEffects, type ExpectedEffect, type ObservedEffect } from './effects.ts';
import type { SeededRecord } from '../seeder.ts';
import { canonical, type ApiEffect } from '../../api/contract.ts';
import { capEvidence } from './evidence.ts';

const MAX_TIMES = 4;

export interface ApiVerifyInput {
  api: ApiSpec;
  /** Every effect the attempt's namespace applied (all services; filtered here). */
  effects: readonly ApiEffect[];
  inputs: readonly SeededRecord[];
  faults: readonly FaultRecord[];
  /** Wall-clock start of the run, to place effects after faults. */
  startedAt: number;
}

const short = (text: string, max = 120) => (text.length > max ? `${text.slice(0, max)}…` : text);
const inputLabel = (r: SeededRecord) => `${r.topic}-${r.partition}@${r.offset} key=${r.key}`;

/** The expected effects by id: the first committed input that asks for an id is its source. */
export function expectedApiEffects(api: ApiSpec, inputs: readonly SeededRecord[]): Map<string, { source: string; body?: ExpectedApiEffect['body'] }> {
  const committed = inputs.filter((r) => r.committed);
  const context = { committed };
  const expected = new Map<string, { source: string; body?: ExpectedApiEffect['body'] }>();
  for (const input of committed) {
    for (const effect of api.effects(input, context)) {
      const seen = expected.get(effect.id);
      // Several inputs may name one id (a window many clicks fall into): the latest body wins.
      expected.set(effect.id, { source: seen?.source ?? inputLabel(input), ...(effect.body ? { body: effect.body } : seen?.body ? { body: seen.body } : {}) });
    }
  }
  return expected;
}

export function checkApiEffects(input: ApiVerifyInput): CheckResult[] {
  const { api, startedAt } = input;
  const applied = input.effects.filter((e) => e.service === api.service && (api.count === 'applied' || e.changed));
  const expected = expectedApiEffects(api, input.inputs);

  const when = (at: number) => `+${((at - startedAt) / 1000).toFixed(1)} s`;
  const faultBefore = (at: number) => {
    const fault = [...input.faults].reverse().find((f) => f.atMs <= at - startedAt);
    return fault ? `${fault.kind} on ${fault.instance}${fault.crashPoint ? ` at ${fault.crashPoint}` : ''}` : null;
  };
  const byId = new Map<string, ApiEffect[]>();
  for (const e of applied) byId.set(e.id, [...(byId.get(e.id) ?? []), e]);

  const observed: ObservedEffect[] = [...byId].map(([id, list]) => {
    const times = list.slice(0, MAX_TIMES).map((e) => `${when(e.at)} ${e.key === null ? 'without Idempotency-Key' : `key "${short(e.key, 60)}"`}`);
    const more = list.length > MAX_TIMES ? `, … ${list.length - MAX_TIMES} more` : '';
    // The fault that preceded the second application is usually what made the program repeat it.
    const second = list[1];
    const fault = second ? faultBefore(second.at) : null;
    return { id, count: list.length, note: `(applied at ${times.join(', ')}${more}${fault ? `; the repeat came after fault ${fault}` : ''})` };
  });
  const expectedList: ExpectedEffect[] = [...expected].map(([id, e]) => ({ id, source: e.source }));
  const [duplicates, lost] = checkEffects(expectedList, observed, api.what);

  // effects-correct: the last application of each expected id carries the expected body.
  const wrong: string[] = [];
  let compared = 0;
  for (const [id, e] of expected) {
    const last = byId.get(id)?.at(-1);
    if (!e.body || !last) continue;
    compared++;
    if (canonical(last.body) !== canonical(e.body)) {
      wrong.push(`${e.source}: ${api.what} "${id}" applied with ${short(JSON.stringify(last.body))}, expected ${short(JSON.stringify(e.body))}`);
    }
  }
  const correct: CheckResult = {
    name: 'effects-correct',
    passed: wrong.length === 0,
    summary: wrong.length === 0 ? `every ${api.what} applied carries the expected data (${compared} compared)` : `${wrong.length} of ${compared} ${api.what}s carry wrong data`,
    evidence: capEvidence(wrong),
  };
  return [duplicates!, lost!, correct];
}
