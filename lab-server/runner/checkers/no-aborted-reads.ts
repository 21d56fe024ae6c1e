/**
 * no-aborted-reads: nothing derived from input written in aborted transactions. In a lab with a
 * database the rows are judged (effect-findings.ts); otherwise the committed output.
 */
import type { Checker } from './contract.ts';
import { effectFindings } from './effect-findings.ts';
import { outputMatch, show } from './output-match.ts';
import { checkResult } from './result.ts';

export const noAbortedReads: Checker = (collected, history) => {
  if (collected.pipeline?.database) return effectFindings(collected, history)?.get('no-aborted-reads') ?? null;
  const m = outputMatch(collected, history);
  if (!m) return null;
  const abortedReads = m.pipeline.output.committed.filter((r) => m.fromAborted.has(m.matchKey(r)));
  return checkResult(
    'no-aborted-reads',
    abortedReads.map((r) => `${m.label(r)} value=${show(r.value)} comes from aborted input ${m.inputLabel(m.fromAborted.get(m.matchKey(r))!.input)}`),
    `none of the ${m.pipeline.inputs.filter((r) => !r.committed).length} aborted input records leaked into the output`,
    (n) => `${n} output records were derived from input written in aborted transactions (read_uncommitted?)`,
  );
};
