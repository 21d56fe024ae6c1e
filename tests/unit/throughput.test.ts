/**
 * The throughput requirement of performance labs: the rate / ratio arithmetic of
 * `throughput-speedup`, its evidence, the burst plan, and the lab-definition rules. The timing
 * itself runs in every grade of the batching lab (the lab matrix, tests/support/labs-matrix.ts).
 */
import { describe, expect, it } from 'vitest';
import { labDefinitionSchema } from '../../src/shared/lab.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { allowedMs, burstRate, checkThroughput, planBurst } from '../../lab-server/runner/pipeline/throughput.ts';
import { asPipeline } from '../support/labs.ts';

const baseline = { records: 150, processed: 150, ms: 5_000 }; // 30 records/s

describe('throughput-speedup', () => {
  it('computes records/s and the time a k-fold speed-up allows', () => {
    expect(burstRate(baseline)).toBeCloseTo(30);
    expect(burstRate({ records: 150, processed: 40, ms: 2_000 })).toBeCloseTo(20);
    expect(burstRate({ records: 10, processed: 10, ms: 0 })).toBe(10_000); // never divides by zero
    // 5x of 30 records/s is 150 records/s: 150 records within 1 s.
    expect(allowedMs(baseline, 5)).toBeCloseTo(1_000);
    // A baseline timed over part of the burst: 40 records in 4 s is 10 records/s; 5x is 50/s.
    expect(allowedMs({ records: 150, processed: 40, ms: 4_000 }, 5)).toBeCloseTo(3_000);
  });

  it('passes at the required multiple and fails just below it, with both rates, the ratio and the times', () => {
    const pass = checkThroughput(5, baseline, { records: 150, processed: 150, ms: 1_000 });
    expect(pass.passed).toBe(true);
    expect(pass.name).toBe('throughput-speedup');
    expect(pass.summary).toBe("5.0x the baseline's throughput (150 vs 30.0 records/s), at least 5x required");
    expect(pass.evidence[0]).toBe('baseline program: all 150 records in 5.00 s = 30.0 records/s');
    expect(pass.evidence[1]).toBe('your program: all 150 records in 1.00 s = 150 records/s');
    expect(pass.evidence[2]).toBe("speed-up: 5.0x (150 / 30.0 records/s); at least 5x the baseline's rate required, i.e. 150 records/s (all 150 records within 1.00 s)");

    const fail = checkThroughput(5, baseline, { records: 150, processed: 150, ms: 1_100 });
    expect(fail.passed).toBe(false);
    expect(fail.summary).toMatch(/^only 4\.5x the baseline's throughput \(136 vs 30\.0 records\/s\), at least 5x required$/);
  });

  it('rates a program that was not done within the window on what it finished in it, as the baseline', () => {
    const window = { records: 600, processed: 40, ms: 4_000 }; // baseline: 10 records/s
    const slow = checkThroughput(5, window, { records: 600, processed: 44, ms: 4_000 });
    expect(slow.passed).toBe(false);
    expect(slow.evidence[0]).toBe('baseline program: 40 of 600 records within the 4.00 s window = 10.0 records/s');
    expect(slow.evidence[1]).toBe('your program: 44 of 600 records within the 4.00 s window = 11.0 records/s');
    expect(slow.summary).toBe("only 1.1x the baseline's throughput (11.0 vs 10.0 records/s), at least 5x required");
    // A crawling machine: not done either, but far ahead of the baseline in the same window.
    const fast = checkThroughput(5, window, { records: 600, processed: 400, ms: 4_000 });
    expect(fast.passed).toBe(true);
    expect(fast.summary).toBe("10x the baseline's throughput (100 vs 10.0 records/s), at least 5x required");
  });

  it('fails, and says why, when the program could not be timed at all', () => {
    const result = checkThroughput(5, { records: 150, processed: 40, ms: 5_000 }, { problem: 'it kept exiting' });
    expect(result.passed).toBe(false);
    expect(result.summary).toBe('your program could not be timed: it kept exiting');
    expect(result.evidence[0]).toBe('baseline program: 40 of 150 records within the 5.00 s window = 8.0 records/s');
  });
});

describe('burst plan', () => {
  it('warms up every input partition, then writes N committed records with values of their own', async () => {
    const lab = asPipeline((await loadLab('batching')).definition);
    const { warmup, burst } = planBurst(lab, 600);
    expect(warmup.commit && burst.commit).toBe(true);
    expect(new Set(warmup.records.map((r) => r.partition))).toEqual(new Set([0, 1, 2]));
    expect(burst.records).toHaveLength(600);
    const values = [...warmup.records, ...burst.records].map((r) => r.value);
    expect(new Set(values).size).toBe(values.length);
    // Every burst record is a valid input of the lab: its transform yields the lab's output.
    for (const r of burst.records) expect(lab.transform(r, { committed: [] })).toHaveLength(1);
  });
});

describe('lab definitions', () => {
  it('accepts a throughput block and rejects a bad one with the field named', async () => {
    const lab = await loadLab('batching');
    expect(asPipeline(lab.definition).throughput).toEqual({ baseline: 'baseline.ts', records: 600, minSpeedup: expect.any(Number) });
    expect(lab.definition.checks).toContain('throughput-speedup');
    const bad = labDefinitionSchema.safeParse({ ...(await import('../../labs/batching/lab.ts')).default, throughput: { baseline: '../x.ts', records: 5, minSpeedup: 0.5 } });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.path.join('.'))).toEqual(expect.arrayContaining(['throughput.baseline', 'throughput.records', 'throughput.minSpeedup']));
  });
});
