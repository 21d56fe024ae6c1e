/** atomic-fan-out: every committed input produced all of its outputs, or none. */
import type { Checker } from './contract.ts';
import { outputMatch } from './output-match.ts';
import { checkResult } from './result.ts';

export const atomicFanOut: Checker = (collected, history) => {
  const m = outputMatch(collected, history);
  if (!m) return null;
  const partial: string[] = [];
  for (const record of m.pipeline.inputs) {
    const ids = m.expectedPerInput.get(record.index);
    if (!ids || ids.length < 2) continue;
    const present = ids.filter((id) => m.actual.has(id)).length;
    if (present > 0 && present < ids.length) partial.push(`input ${m.inputLabel(record)}: ${present} of ${ids.length} outputs committed`);
  }
  return checkResult('atomic-fan-out', partial, 'every input produced all of its outputs or none', (n) => `${n} inputs produced only part of their outputs`);
};
