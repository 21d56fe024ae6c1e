import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The kafka tier's files run in lanes side by side, and the run lasts as long as its slowest lane.
 * The lab matrix's shards are the longest files by far but the smallest on disk, so vitest's own
 * order (a file's last duration, else its size) would start them last on a clean clone: they go
 * first here, then vitest's order.
 */
const LONGEST = [/[\\/]tests[\\/]labs-\d+\.test\.ts$/];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => [spec.project.config.sequence.groupOrder, LONGEST.some((pattern) => pattern.test(spec.moduleId)) ? 0 : 1];
    // Within a project group only: the unit tier still runs first.
    return sorted
      .map((spec, index) => ({ spec, key: [...rank(spec), index] }))
      .sort((a, b) => a.key[0]! - b.key[0]! || a.key[1]! - b.key[1]! || a.key[2]! - b.key[2]!)
      .map(({ spec }) => spec);
  }
}
