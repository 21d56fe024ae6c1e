/**
 * The seeded input of a grade (lab-server/runner/seeder.ts): its transactions and their waves.
 */
import { describe, expect, it } from 'vitest';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { planSeedTransactions, splitIntoWaves } from '../../lab-server/runner/seeder.ts';
import { asPipeline } from '../support/labs.ts';

describe('seeding', () => {
  it('writes aborted transactions, ends every seed with a committed one and keeps a key on one partition', async () => {
    const lab = asPipeline((await loadLab('single-stage')).definition);
    const txns = planSeedTransactions(lab);
    expect(txns.filter((t) => !t.commit).length).toBeGreaterThan(3);
    expect(txns.at(-1)!.commit).toBe(true);
    const partitionOfKey = new Map<string, number>();
    for (const r of txns.flatMap((t) => t.records)) {
      expect(partitionOfKey.get(r.key) ?? r.partition).toBe(r.partition);
      partitionOfKey.set(r.key, r.partition);
    }
    const values = txns.flatMap((t) => t.records.map((r) => r.value));
    expect(new Set(values).size).toBe(values.length);
    const waves = splitIntoWaves(txns, 5);
    expect(waves).toHaveLength(5);
    expect(waves.flat()).toEqual(txns);
  });
});
