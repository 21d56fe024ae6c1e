/** no-duplicates: no input's output appears twice in the committed output. */
import type { Checker } from './contract.ts';
import { outputMatch, show } from './output-match.ts';
import { checkResult } from './result.ts';

export const noDuplicates: Checker = (collected, history) => {
  const m = outputMatch(collected, history);
  if (!m) return null;
  const dupes = [...m.actual].filter(([, records]) => records.length > 1);
  return checkResult(
    'no-duplicates',
    dupes.flatMap(([, records]) =>
      records.slice(1).map((r) =>
        m.lab.origin
          ? // Same origin, maybe another value (a total counted again): show both.
            `${m.label(r)} key=${r.key} value=${show(r.value, 120)} is a second output for the input of ${m.label(records[0]!)} value=${show(records[0]!.value, 120)}${m.faultBefore(r.timestamp)}`
          : `${m.label(r)} key=${r.key} value=${show(r.value)} duplicates ${m.label(records[0]!)}${m.faultBefore(r.timestamp)}`,
      ),
    ),
    'no output record appears twice',
    () => `${dupes.reduce((n, [, r]) => n + r.length - 1, 0)} duplicate output records (${dupes.length} inputs processed more than once)`,
  );
};
