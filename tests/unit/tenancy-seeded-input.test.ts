/**
 * A grade's input is drawn from its seed: values and which seeding transactions abort differ
 * between seeds (so no program can carry the expected output precomputed) and are the same for
 * the same seed (so a replay reproduces it). Keys and their partitions stay as the lab defines.
 */
import { describe, expect, it } from 'vitest';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { planSeedTransactions } from '../../lab-server/runner/seeder.ts';
import { asPipeline } from '../support/labs.ts';

describe('seeded input', () => {
  it('differs between seeds and repeats for one seed', async () => {
    const lab = asPipeline((await loadLab('single-stage')).definition);
    const shape = (seed: number) => {
      const txns = planSeedTransactions(lab, seed);
      return { values: txns.flatMap((t) => t.records.map((r) => r.value)), aborts: txns.map((t) => t.commit), keys: txns.flatMap((t) => t.records.map((r) => `${r.key}@${r.partition}`)) };
    };
    const a = shape(101);
    expect(shape(101)).toEqual(a);
    const others = [102, 103, 104, 105].map(shape);
    for (const b of others) {
      expect(b.values).not.toEqual(a.values);
      expect(b.keys).toEqual(a.keys);
      expect(b.values.filter((v, i) => v === a.values[i]).length).toBeLessThan(a.values.length / 4);
    }
    // Which transactions abort moves with the seed (one of abortEvery phases), the share does not.
    expect(new Set([a, ...others].map((s) => s.aborts.join(''))).size).toBeGreaterThan(1);
    for (const s of others) expect(Math.abs(s.aborts.filter((c) => !c).length - a.aborts.filter((c) => !c).length)).toBeLessThanOrEqual(1);
    // The values still embed the record index (unique, ordered), as checks rely on.
    expect(new Set(a.values).size).toBe(a.values.length);
  });
});
