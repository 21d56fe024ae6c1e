/**
 * offsets-consistent: the group's committed offsets end right after the last processed input. In
 * a grade the time limit cut off while the program worked (cut-off.ts), the end of the log cannot
 * be expected: the offsets must then reach past every input whose output is committed (a program
 * that commits them in one transaction always has), and no further than the end of the log.
 */
import type { Checker } from './contract.ts';
import { afterLastDone, cutOffWhileWorking, partitionKey } from './cut-off.ts';
import { outputMatch } from './output-match.ts';
import { checkResult } from './result.ts';

export const offsetsConsistent: Checker = (collected, history) => {
  const pipeline = collected.pipeline;
  if (!pipeline) return null;
  const done = cutOffWhileWorking(pipeline, history) ? afterLastDone(outputMatch(collected, history)!) : null;
  const failures: string[] = [];
  for (const end of pipeline.output.inputOffsets) {
    // Where the offsets must reach, and why; -1: anywhere up to the end of the log.
    let from: number;
    let after: string;
    if (done) {
      from = done.get(partitionKey(end.topic, end.partition)) ?? -1;
      after = 'after the last input whose output is committed';
    } else {
      const lastData = Math.max(-1, ...pipeline.inputs.filter((r) => r.topic === end.topic && r.partition === end.partition && r.committed).map((r) => r.offset));
      if (lastData < 0) continue;
      from = lastData + 1;
      after = `after the last record, offset ${lastData}`;
    }
    const got = end.committed;
    if ((from >= 0 && got < from) || got > end.hwm) {
      failures.push(
        `${end.topic}-${end.partition}: group ${got < 0 ? 'has no committed offset' : `committed offset ${got}`}, expected between ${Math.max(0, from)} (${after}) and ${end.hwm} (end of log)` +
          (got === from - 1 ? ' — off by one: commit the offset of the NEXT record to read (last + 1)' : ''),
      );
    }
  }
  const okSummary = done ? "the group's committed offsets reach past every input whose output is committed (the time limit came before the end)" : "the group's committed offsets end right after the last input";
  return checkResult('offsets-consistent', failures, okSummary, (n) => `${n} input partitions have wrong committed offsets`);
};
