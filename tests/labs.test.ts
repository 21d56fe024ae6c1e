/**
 * The proof that every lab is gradeable: `kafkaiq check` on all of them, on the real broker, with
 * real faults (kills, zombies, paused instances, broker restarts). Solutions take the full plan;
 * programs that must fail take the quick plan first (see checkLabs). Each lab is one assertion, so
 * a failure names the lab, the program and what the grader said.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectCluster, type KafkaCluster } from '../lab-server/broker/cluster.ts';
import { listLabIds } from '../lab-server/labs/load-lab.ts';
import { checkLabs, type FixtureResult } from '../lab-server/runner/check-labs.ts';

const labs = listLabIds();
let cluster: KafkaCluster;
let results: FixtureResult[] = [];

beforeAll(async () => {
  process.env.KAFKA_BROKERS = inject('brokers').join(',');
  cluster = await connectCluster();
  results = await checkLabs(labs, cluster, { parallel: 3, log: (line) => console.log(line) });
}, 25 * 60_000);

afterAll(async () => {
  await cluster?.close();
});

describe.each(labs)('lab %s', (lab) => {
  it('passes its solution, fails its starter, and fails each broken variant on its named check', () => {
    const mine = results.filter((r) => r.lab === lab);
    expect(mine.map((r) => r.program)).toEqual(expect.arrayContaining(['solution', 'starter']));
    const wrong = mine.filter((r) => !r.ok).map((r) => `${r.program}: expected ${r.expected}, got ${r.got}`);
    expect(wrong).toEqual([]);
  });
});
