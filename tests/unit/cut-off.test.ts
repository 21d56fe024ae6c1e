/**
 * A grade the time limit cut off judges only what the program claimed done (checkers/cut-off.ts):
 * no-loss and offsets-consistent, pure, on a collected pipeline built here. No Kafka.
 */
import { describe, expect, it } from 'vitest';
import { pipelineLabSchema, type SeedRecord } from '../../src/shared/lab.ts';
import type { GradeHistory, PipelineCollected } from '../../lab-server/runner/checkers/contract.ts';
import { runCheckers } from '../../lab-server/runner/checkers/index.ts';
import type { SeededRecord } from '../../lab-server/runner/seeder.ts';

const upper = (r: SeedRecord) => [{ topic: 'out', key: r.key, value: r.value.toUpperCase() }];
const lab = (internal = false) =>
  pipelineLabSchema.parse({
    title: 'upper',
    summary: 'upper-cases each value',
    env: [{ name: 'KAFKA_BROKERS', description: 'x' }],
    topics: [
      { name: 'in', env: 'IN', partitions: 1, role: 'input', description: 'words' },
      ...(internal ? [{ name: 'mid', env: 'MID', partitions: 1, role: 'internal', description: 'between stages' }] : []),
      { name: 'out', env: 'OUT', partitions: 1, role: 'output', description: 'WORDS' },
    ],
    seeds: [{ topic: 'in', records: 10 }],
    transform: upper,
    faults: { full: [{ kind: 'kill' }], quick: [{ kind: 'kill' }] },
    checks: ['no-loss', 'offsets-consistent'],
  });

const inputs: SeededRecord[] = Array.from({ length: 10 }, (_, i) => ({ topic: 'in', partition: 0, key: `k${i}`, value: `word-${i}`, index: i, committed: true, offset: i }));

/** The program wrote the outputs of inputs `done` and committed the group's offset at `offset`. */
function collected(done: number[], offset: number, internal = false): { pipeline: PipelineCollected; monitor: null } {
  const committed = done.map((i, n) => ({ topic: 'real-out', partition: 0, offset: n, key: `k${i}`, value: `WORD-${i}`, headers: {}, timestamp: 0 }));
  return {
    pipeline: {
      lab: lab(internal),
      realTopic: (t) => `real-${t}`,
      inputs,
      output: { committed, uncommitted: committed, hanging: [], blocked: [], inputOffsets: [{ topic: 'in', partition: 0, committed: offset, hwm: 10 }] },
      logStarts: [],
      database: null,
      api: null,
      transactionLog: null,
      throughput: null,
    },
    monitor: null,
  };
}

const history = (cutOff: string | null): GradeHistory => ({ namespace: 'ns', startedAt: 0, faults: [], stalls: { stalls: [], boundMs: 12_000, longestMs: 0 }, transactions: null, cutOff });
const judge = (c: ReturnType<typeof collected>, cutOff: string | null) => Object.fromEntries(runCheckers(['no-loss', 'offsets-consistent'], c, history(cutOff)).map((r) => [r.name, r]));
const CUT = '6 of 10 inputs processed';
const first = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('a grade that ran to the end', () => {
  it('counts every committed input: six of ten processed is a loss and short offsets', () => {
    const checks = judge(collected(first(6), 6), null);
    expect(checks['no-loss']).toMatchObject({ passed: false, summary: '4 of 10 expected outputs are missing from the committed output' });
    expect(checks['offsets-consistent']).toMatchObject({ passed: false, evidence: [expect.stringContaining('expected between 10')] });
  });
});

describe('a grade the time limit cut off', () => {
  it('does not count inputs past the committed offset as lost, nor demand offsets at the end of the log', () => {
    const checks = judge(collected(first(6), 6), CUT);
    expect(checks['no-loss']).toMatchObject({ passed: true, summary: 'all 6 expected outputs of the inputs your program had committed (4 more were not processed when the time limit came: not judged) are committed' });
    expect(checks['offsets-consistent']!.passed).toBe(true);
  });

  it('judges a program that committed nothing in the whole time limit on everything: not slow, not working', () => {
    const checks = judge(collected([], -1), CUT);
    expect(checks['no-loss']).toMatchObject({ passed: false, summary: '10 of 10 expected outputs are missing from the committed output' });
    expect(checks['offsets-consistent']).toMatchObject({ passed: false, evidence: [expect.stringContaining('has no committed offset, expected between 10')] });
  });

  it('still fails a claimed input without output: offsets committed past lost work', () => {
    const checks = judge(collected([0, 1, 2, 4, 5], 6), CUT);
    expect(checks['no-loss']).toMatchObject({ passed: false, evidence: [expect.stringContaining('in-0@3')] });
  });

  it('still fails offsets behind the program\'s own output, and names an off-by-one', () => {
    const behind = judge(collected(first(6), 3), CUT);
    expect(behind['offsets-consistent']).toMatchObject({ passed: false, evidence: [expect.stringMatching(/committed offset 3, expected between 6 .* and 10/)] });
    const offByOne = judge(collected(first(6), 5), CUT);
    expect(offByOne['offsets-consistent']!.evidence[0]).toContain('off by one');
    const none = judge(collected(first(6), -1), CUT);
    expect(none['offsets-consistent']).toMatchObject({ passed: false, evidence: [expect.stringContaining('has no committed offset')] });
  });

  it('claims nothing for a lab with internal topics: the first stage\'s offsets say nothing of the last', () => {
    const checks = judge(collected([0, 1, 2], 6, true), CUT);
    expect(checks['no-loss']).toMatchObject({ passed: true, summary: expect.stringContaining('10 more were not processed') });
  });
});
