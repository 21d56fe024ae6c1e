/** no-loss: every output the committed input asks for is in the committed output. */
import type { Checker } from './contract.ts';
import { outputMatch } from './output-match.ts';
import { checkResult } from './result.ts';

export const noLoss: Checker = (collected, history) => {
  const m = outputMatch(collected, history);
  if (!m) return null;
  const { hanging, blocked } = m.pipeline.output;
  const missing = [...m.fromCommitted].filter(([id]) => !m.actual.has(id));
  // Output held back by an open transaction or a blocked reader is why it may be missing: say so first.
  const lossNotes = blocked.length || hanging.length ? [...hanging, ...(history.transactions?.insideTimeout ?? []), ...blocked] : [];
  return checkResult(
    'no-loss',
    missing.length ? [...lossNotes, ...missing.map(([, e]) => `missing output for input ${m.inputLabel(e.input)}`)] : [],
    `all ${m.fromCommitted.size} expected outputs are committed`,
    () => `${missing.length} of ${m.fromCommitted.size} expected outputs are missing from the committed output`,
  );
};
