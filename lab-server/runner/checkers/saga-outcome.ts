/**
 * saga-outcome (labs with api.service 'saga'): every saga that started ended completed or fully
 * compensated, with each step applied once. A saga is one committed order; its effects are the
 * saga service's `<step>:<orderId>` effects (lab-server/api/saga-service.ts), and which ending it
 * must reach comes from the lab's `api.effects`: an order expected to be charged must complete
 * (reserve once, charge once, no release); one expected to be released must be compensated
 * (reserve once, release once after it, no charge).
 *
 * An order with no effect at all never started: that is no-lost-effects' to report. Effects of
 * orders no committed input asks for are no-duplicate-effects'. A pure function of the effects and
 * the inputs, like every checker.
 */
import type { ApiSpec } from '../../../src/shared/lab.ts';
import type { CheckResult } from '../../../src/shared/report.ts';
import type { ApiEffect } from '../../api/contract.ts';
import type { SeededRecord } from '../seeder.ts';
import type { Checker } from './contract.ts';
import { capEvidence } from './evidence.ts';

export const SAGA_STEPS = ['reserve', 'charge', 'release'] as const;
type Step = (typeof SAGA_STEPS)[number];

export interface SagaOutcomeInput {
  api: ApiSpec;
  /** Every effect the attempt's namespace applied (filtered to the saga service here). */
  effects: readonly ApiEffect[];
  inputs: readonly SeededRecord[];
}

/** `reserve:ord-00042` -> ['reserve', 'ord-00042'], or null for an id of another shape. */
function splitId(id: string): [Step, string] | null {
  const colon = id.indexOf(':');
  const step = id.slice(0, colon) as Step;
  return colon > 0 && SAGA_STEPS.includes(step) ? [step, id.slice(colon + 1)] : null;
}

export function checkSagaOutcome(input: SagaOutcomeInput): CheckResult {
  const committed = input.inputs.filter((r) => r.committed);
  // The ending each committed order must reach, from the steps the lab expects of it.
  const ending = new Map<string, 'complete' | 'compensate'>();
  for (const record of committed) {
    for (const { id } of input.api.effects(record, { committed })) {
      const parts = splitId(id);
      if (!parts) continue;
      const [step, orderId] = parts;
      if (step === 'charge') ending.set(orderId, 'complete');
      else if (step === 'release' && ending.get(orderId) !== 'complete') ending.set(orderId, 'compensate');
    }
  }
  const applied = new Map<string, ApiEffect[]>();
  for (const effect of input.effects) {
    const parts = effect.service === 'saga' ? splitId(effect.id) : null;
    if (parts && ending.has(parts[1])) applied.set(parts[1], [...(applied.get(parts[1]) ?? []), effect]);
  }

  const wrong: string[] = [];
  let completed = 0;
  let compensated = 0;
  for (const [orderId, effects] of applied) {
    const of = (step: Step) => effects.filter((e) => splitId(e.id)![0] === step);
    const [reserve, charge, release] = SAGA_STEPS.map(of) as [ApiEffect[], ApiEffect[], ApiEffect[]];
    const tally = `reserve x${reserve.length}, charge x${charge.length}, release x${release.length}`;
    const isCompleted = reserve.length === 1 && charge.length === 1 && release.length === 0;
    const isCompensated = reserve.length === 1 && release.length === 1 && charge.length === 0 && release[0]!.seq > reserve[0]!.seq;
    const must = ending.get(orderId)!;
    if (must === 'complete' && isCompleted) completed++;
    else if (must === 'compensate' && isCompensated) compensated++;
    else if (must === 'complete' && isCompensated) wrong.push(`${orderId}: ${tally}: compensated, but its card is accepted, so the saga had to complete`);
    else if (must === 'compensate' && isCompleted) wrong.push(`${orderId}: ${tally}: completed, but its card is declined, so the saga had to be compensated`);
    else {
      const why = reserve.length > 1 || charge.length > 1 || release.length > 1 ? 'a step applied more than once' : release.length && reserve.length && release[0]!.seq < reserve[0]!.seq ? 'released before it was reserved' : 'neither completed nor compensated';
      wrong.push(`${orderId}: ${tally}: ${why}`);
    }
  }
  const started = applied.size;
  return {
    name: 'saga-outcome',
    passed: wrong.length === 0,
    summary:
      wrong.length === 0
        ? `all ${started} started sagas ended completed (${completed}) or fully compensated (${compensated}), each step applied once`
        : `${wrong.length} of ${started} started sagas did not end completed or fully compensated`,
    evidence: capEvidence(wrong),
  };
}

export const sagaOutcome: Checker = (collected) => {
  const pipeline = collected.pipeline;
  if (!pipeline?.api || pipeline.api.spec.service !== 'saga') return null;
  return checkSagaOutcome({ api: pipeline.api.spec, effects: pipeline.api.effects, inputs: pipeline.inputs });
};
