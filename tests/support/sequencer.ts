import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The kafka tier's files run in lanes side by side, and the run lasts as long as its slowest lane.
 * Vitest's own order (a file's last duration, else its size) knows no durations on a clean clone,
 * so it would start the longest files last, as they are small on disk: they go first here, in
 * this order, then vitest's. The lab matrix's shards are the longest by far. The scaffold check
 * (a new lab checked in both plans) is next: it mostly waits on its grades' faults, so it costs
 * little beside the matrix, while started last it would run alone for minutes with the machine's
 * cores mostly idle. Then the files that take a minute or more in CI, longest first (a clean-clone
 * run: 166 s down to 52 s), so that a lane freed by the matrix finds only short files left and
 * the lanes end together: started last, a 2-minute file ran on alone after every other lane had
 * finished.
 */
const LONGEST = [
  /[\\/]tests[\\/]labs-\d+\.test\.ts$/,
  /[\\/]tests[\\/]scaffold-transform\.test\.ts$/,
  ...['e2e/accessibility', 'security/wire-fault-steering', 'three-node', 'e2e/workbench', 'security/sandbox-attacks', 'quiet-programs', 'security/tenancy-perimeter', 'lesson-code', 'e2e/learner-history'].map(
    (file) => new RegExp(`[\\\\/]tests[\\\\/]${file.replace('/', '[\\\\/]')}\\.test\\.ts$`),
  ),
];

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
