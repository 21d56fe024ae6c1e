import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The kafka tier's files run in lanes side by side, and the run lasts as long as its slowest lane.
 * Vitest's own order (a file's last duration, else its size) knows no durations on a clean clone,
 * so it would start the longest files last, as they are small on disk, and one of them would then
 * run alone at the end with the cores mostly idle. The files below go first, in this order, then
 * vitest's: the lab matrix's shards, the longest by far, then every other file that takes a minute
 * or more in CI, longest first (their times: docs/benchmarks/journal.md). Started first, a long file
 * runs beside others; started last, it would run alone while the cores idle. A file missing here
 * is only started later, never skipped.
 */
const LONGEST = [
  /[\\/]tests[\\/]labs-\d+\.test\.ts$/,
  /[\\/]tests[\\/]e2e[\\/]accessibility\.test\.ts$/,
  /[\\/]tests[\\/]scaffold-transform\.test\.ts$/,
  /[\\/]tests[\\/]security[\\/]wire-fault-steering\.test\.ts$/,
  /[\\/]tests[\\/]security[\\/]sandbox-attacks\.test\.ts$/,
  /[\\/]tests[\\/]three-node\.test\.ts$/,
  /[\\/]tests[\\/]e2e[\\/]workbench\.test\.ts$/,
  /[\\/]tests[\\/]quiet-programs\.test\.ts$/,
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
