/**
 * The proof that every lab is gradeable: `kafkaiq check` on all of them, on the real broker (and
 * the 3-node cluster for the failover labs), with the full fault plans (kills, a zombie, broker
 * restarts, a killed transaction coordinator). Solutions take the full plan; programs that must fail
 * take the quick plan first (see checkLabs). Each lab is one assertion, so a failure names the lab,
 * the program and what the grader said.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ClusterPool } from '../lab-server/broker/cluster-pool.ts';
import { listLabIds } from '../lab-server/labs/load-lab.ts';
import { checkLabs, type FixtureResult } from '../lab-server/runner/check-labs.ts';

const labs = listLabIds();
let clusters: ClusterPool;
let results: FixtureResult[] = [];

beforeAll(async () => {
  process.env.KAFKA_BROKERS = inject('brokers').join(',');
  // Each lab on the cluster it declares: the 3-node cluster of the failover labs comes from the
  // run's global setup, started on first use.
  clusters = new ClusterPool();
  results = await checkLabs(labs, clusters, { parallel: 3, log: (line) => console.log(line) });
}, 25 * 60_000);

afterAll(async () => {
  await clusters?.close();
});

describe.each(labs)('lab %s', (lab) => {
  it('passes its solution, fails its starter, and fails each broken variant on its named check', () => {
    const mine = results.filter((r) => r.lab === lab);
    expect(mine.map((r) => r.program)).toEqual(expect.arrayContaining(['solution', 'starter']));
    const wrong = mine.filter((r) => !r.ok).map((r) => `${r.program}: expected ${r.expected}, got ${r.got}`);
    expect(wrong).toEqual([]);
  });
});
