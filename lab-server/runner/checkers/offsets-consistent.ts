/** offsets-consistent: the group's committed offsets end right after the last processed input. */
import type { Checker } from './contract.ts';
import { checkResult } from './result.ts';

export const offsetsConsistent: Checker = (collected) => {
  const pipeline = collected.pipeline;
  if (!pipeline) return null;
  const failures: string[] = [];
  for (const end of pipeline.output.inputOffsets) {
    const lastData = Math.max(-1, ...pipeline.inputs.filter((r) => r.topic === end.topic && r.partition === end.partition && r.committed).map((r) => r.offset));
    const got = end.committed;
    if (lastData < 0) continue;
    if (got < lastData + 1 || got > end.hwm) {
      failures.push(
        `${end.topic}-${end.partition}: group ${got < 0 ? 'has no committed offset' : `committed offset ${got}`}, expected between ${lastData + 1} (after the last record, offset ${lastData}) and ${end.hwm} (end of log)` +
          (got === lastData ? ' — off by one: commit the offset of the NEXT record to read (last + 1)' : ''),
      );
    }
  }
  return checkResult('offsets-consistent', failures, "the group's committed offsets end right after the last input", (n) => `${n} input partitions have wrong committed offsets`);
};
