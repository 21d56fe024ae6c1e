/**
 * no-loss: every output the committed input asks for is in the committed output. In a grade the
 * time limit cut off while the program worked, only of the inputs it claimed done (cut-off.ts):
 * the rest were never processed, which is unfinished work, not a loss.
 */
import type { Checker } from './contract.ts';
import { claimedDone } from './cut-off.ts';
import { outputMatch } from './output-match.ts';
import { checkResult } from './result.ts';

export const noLoss: Checker = (collected, history) => {
  const m = outputMatch(collected, history);
  if (!m) return null;
  const { hanging, blocked } = m.pipeline.output;
  const claimed = claimedDone(m.pipeline, history);
  const judged = [...m.fromCommitted].filter(([, e]) => claimed(e.input));
  const missing = judged.filter(([id]) => !m.actual.has(id));
  const unfinished = m.fromCommitted.size - judged.length;
  const scope = unfinished ? ` of the inputs your program had committed (${unfinished} more were not processed when the time limit came: not judged)` : '';
  // Output held back by an open transaction or a blocked reader is why it may be missing: say so first.
  const lossNotes = blocked.length || hanging.length ? [...hanging, ...(history.transactions?.insideTimeout ?? []), ...blocked] : [];
  return checkResult(
    'no-loss',
    missing.length ? [...lossNotes, ...missing.map(([, e]) => `missing output for input ${m.inputLabel(e.input)}`)] : [],
    `all ${judged.length} expected outputs${scope} are committed`,
    () => `${missing.length} of ${judged.length} expected outputs${scope} are missing from the committed output`,
  );
};
