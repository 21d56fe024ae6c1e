/**
 * What a grade the time limit cut off may judge. A program that was working when the limit came
 * (it had committed output or offsets) had not finished, so an input it had not claimed done is
 * unfinished work, not a loss, and its group's offsets cannot be expected at the end of the log.
 * What it did claim is judged in full: a cut-off grade whose checks all hold is inconclusive,
 * never a pass (pipeline/inconclusive.ts), and one that lost a claimed input or committed offsets
 * behind its own output still fails. A program that committed nothing at all in the whole time
 * limit was not slow but not working (refused by the broker, crashing at every start, waiting
 * for a batch that never fills): it is judged on everything, as a grade that ran to the end.
 *
 * Claimed done: an input below its group's committed offset on its partition. A lab with internal
 * topics is read through its first stage's group, which says nothing of its later stages, so none
 * of its inputs counts as claimed. Pure.
 */
import type { GradeHistory, PipelineCollected } from './contract.ts';
import type { OutputMatch } from './output-match.ts';
import type { SeededRecord } from '../seeder.ts';

export const partitionKey = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/** Whether the grade is judged as cut off: the time limit came while the program was working. */
export function cutOffWhileWorking(pipeline: PipelineCollected, history: GradeHistory): boolean {
  return history.cutOff !== null && (pipeline.output.committed.length > 0 || pipeline.output.inputOffsets.some((o) => o.committed > 0));
}

/** Whether the program claimed an input done; every input counts unless the grade was cut off while it worked. */
export function claimedDone(pipeline: PipelineCollected, history: GradeHistory): (input: SeededRecord) => boolean {
  if (!cutOffWhileWorking(pipeline, history)) return () => true;
  if (pipeline.lab.topics.some((t) => t.role === 'internal')) return () => false;
  const committed = new Map(pipeline.output.inputOffsets.map((o) => [partitionKey(o.topic, o.partition), o.committed]));
  return (input) => input.offset < (committed.get(partitionKey(input.topic, input.partition)) ?? -1);
}

/**
 * Per input partition, the offset right after the last input whose every output is committed:
 * where a program that commits offsets with its output (one transaction) must have committed at
 * least, wherever the time limit stopped it. -1 where no input's output is there yet.
 */
export function afterLastDone(m: OutputMatch): Map<string, number> {
  const after = new Map<string, number>();
  for (const input of m.pipeline.inputs) {
    const ids = m.expectedPerInput.get(input.index);
    if (!input.committed || !ids?.length || !ids.every((id) => m.actual.has(id))) continue;
    const key = partitionKey(input.topic, input.partition);
    after.set(key, Math.max(after.get(key) ?? -1, input.offset + 1));
  }
  return after;
}
