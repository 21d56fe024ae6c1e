import type { CheckResult } from '../../../src/shared/report.ts';
import { capEvidence } from './evidence.ts';


/** One input whose effect must land exactly once on the other side (a row, a charge, a POST). */
export interface ExpectedEffect {
  /** What identifies the effect on the other side: an order id, an idempotency key, a window. */
  id: string;
  /** Where it came from, for evidence: e.g. `orders-1@17 key "c3"`. */
  source: string;
}

/** What the external system holds for one id, as the grader read it after the run. */
export interface ObservedEffect {
  id: string;
  /** How many times the effect was applied (rows with this id, charges for this key, ...). */
  count: number;
  /** The fault that came just before the effect, if the observer knows when it was applied. */
  note?: string;
}

/**
 * `no-duplicate-effects` and `no-lost-effects` for labs whose output is an external effect: every
 * expected id applied exactly once. Ids that nobody expected count as duplicates' evidence too
 * (an effect of an aborted input, or of a made-up key), so a program cannot pass by writing junk.
 * `what` names the effect in the summary, e.g. "order row" or "charge".
 */
export function checkEffects(expected: ExpectedEffect[], observed: ObservedEffect[], what: string): CheckResult[] {
  const counts = new Map<string, ObservedEffect>();
  for (const o of observed) {
    const seen = counts.get(o.id);
    counts.set(o.id, seen ? { ...seen, count: seen.count + o.count } : o);
  }
  const expectedIds = new Set(expected.map((e) => e.id));
  const duplicated = expected.filter((e) => (counts.get(e.id)?.count ?? 0) > 1);
  const lost = expected.filter((e) => (counts.get(e.id)?.count ?? 0) === 0);
  const unexpected = [...counts.values()].filter((o) => !expectedIds.has(o.id) && o.count > 0);
  const note = (id: string) => (counts.get(id)?.note ? ` ${counts.get(id)!.note}` : '');

  const duplicateEvidence = [
    ...duplicated.map((e) => `${e.source}: ${what} "${e.id}" applied ${counts.get(e.id)!.count} times${note(e.id)}`),
    ...unexpected.map((o) => `${what} "${o.id}" applied ${o.count} time(s) but no committed input asks for it${o.note ? ` ${o.note}` : ''}`),
  ];
  const plural = (n: number) => `${n} ${what}${n === 1 ? '' : 's'}`;
  return [
    {
      name: 'no-duplicate-effects',
      passed: duplicateEvidence.length === 0,
      summary:
        duplicateEvidence.length === 0
          ? `each of ${plural(expected.length)} applied at most once`
          : `${duplicated.length} of ${plural(expected.length)} applied more than once${unexpected.length ? `, ${unexpected.length} applied without a committed input` : ''}`,
      evidence: capEvidence(duplicateEvidence),
    },
    {
      name: 'no-lost-effects',
      passed: lost.length === 0,
      summary: lost.length === 0 ? `all ${plural(expected.length)} applied` : `${lost.length} of ${plural(expected.length)} never applied`,
      evidence: capEvidence(lost.map((e) => `${e.source}: no ${what} "${e.id}"`)),
    },
  ];
}
