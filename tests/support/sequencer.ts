import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The kafka tier's files run in lanes side by side, and the run lasts as long as its slowest lane.
 * Vitest's own order (a file's last duration, else its size) knows no durations on a clean clone,
 * so it would start the longest files last, as they are small on disk: they go first here, in
 * this order, then vitest's. The lab matrix's shards are the longest by far. The scaffold check
 * (a new lab checked in both plans) is next: it mostly waits on its grades' faults, so it costs
 * little beside the matrix, while started last it would run alone for minutes with the machine's
 * cores mostly idle.
 */
const LONGEST = [/[\\/]tests[\\/]labs-\d+\.test\.ts$/, /[\\/]tests[\\/]scaffold-transform\.test\.ts$/];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const longest = LONGEST.findIndex((pattern) => pattern.test(spec.moduleId));
      return [spec.project.config.sequence.groupOrder, longest < 0 ? LONGEST.length : longest];
    };
    // Within a project group only: the unit tier still runs first.
    return sorted
      .map((spec, index) => ({ spec, key: [...rank(spec), index] }))
      .sort((a, b) => a.key[0]! - b.key[0]! || a.key[1]! - b.key[1]! || a.key[2]! - b.key[2]!)
      .map(({ spec }) => spec);
  }
}
