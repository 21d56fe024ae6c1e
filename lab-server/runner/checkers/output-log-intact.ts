/**
 * output-log-intact: every output partition still starts at offset 0. Records before a log start
 * above 0 are gone from the broker (DeleteRecords, or retention after a flood), so no other check
 * could see them: a lost or duplicated record there would pass unseen. Attempt users have no
 * DELETE right and attempt topics keep 64 MiB per partition, so a grade that finds this fails,
 * with the offsets as evidence. Always judged, whatever checks the lab lists (lifecycle.ts).
 */
import type { CheckResult } from '../../../src/shared/report.ts';
import type { Checker } from './contract.ts';
import type { PartitionStart } from './output-read.ts';


export function checkOutputLogIntact(starts: readonly PartitionStart[]): CheckResult {
  const moved = starts.filter((p) => p.logStart > 0);
  if (moved.length === 0) {
    return { name: 'output-log-intact', passed: true, summary: `every output partition (${starts.length}) still holds its log from offset 0`, evidence: [] };
  }
  return {
    name: 'output-log-intact',
    passed: false,
    summary: `${moved.length} output partition(s) lost the start of their log: what they held before cannot be verified`,
    evidence: moved.slice(0, 20).map((p) => `${p.topic}-${p.partition}: log start offset ${p.logStart} (records 0..${p.logStart - 1} were deleted before verification)`),
  };
}

export const outputLogIntact: Checker = (collected) => (collected.pipeline ? checkOutputLogIntact(collected.pipeline.logStarts) : null);
