/** transform-correct: every committed output is the lab's transform of its input, with the input's key. */
import type { ExpectedRecord } from '../../../src/shared/lab.ts';
import type { Checker } from './contract.ts';
import { identity, outputMatch, show } from './output-match.ts';
import { checkResult } from './result.ts';

export const transformCorrect: Checker = (collected, history) => {
  const m = outputMatch(collected, history);
  if (!m) return null;
  const { origin } = m.lab;
  const wrong = m.pipeline.output.committed.filter((r) =>
    origin ? !m.expectedIdentities.has(identity(r)) && !m.fromAborted.has(m.matchKey(r)) : !m.fromCommitted.has(identity(r)) && !m.fromAborted.has(identity(r)),
  );
  const byValue = new Map<string, ExpectedRecord>();
  for (const { expected } of m.fromCommitted.values()) byValue.set(`${expected.topic}\u0000${expected.value}`, expected);
  return checkResult(
    'transform-correct',
    wrong.map((r) => {
      const sameOrigin = origin ? m.fromCommitted.get(m.matchKey(r)) : undefined;
      if (sameOrigin) {
        const { expected } = sameOrigin;
        return expected.value !== r.value
          ? `${m.label(r)} key=${r.key} value=${show(r.value, 120)} should be ${show(expected.value, 120)} (input ${m.inputLabel(sameOrigin.input)})${m.faultBefore(r.timestamp)}`
          : `${m.label(r)} has key=${r.key} but the input's key is ${expected.key}`;
      }
      const sameValue = byValue.get(`${m.logical(r.topic)}\u0000${r.value}`);
      return sameValue
        ? `${m.label(r)} has key=${r.key} but the input's key is ${sameValue.key}`
        : `${m.label(r)} key=${r.key} value=${show(r.value)} is not the lab's transform of any input`;
    }),
    'every output is the expected transform of its input, with the same key',
    (n) => (origin ? `${n} output records do not have the value their input should give` : `${n} output records are not the expected transform of any input`),
  );
};
