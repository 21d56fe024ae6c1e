/**
 * The seeded input of a grade (lab-server/runner/seeder.ts): its transactions and their waves, and
 * how the grader's producers write them.
 */
import type { Kafka } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { InputWriter, planSeedTransactions, splitIntoWaves, type SeedTransaction } from '../../lab-server/runner/seeder.ts';
import { LAST_WAVES, takeWave } from '../../lab-server/runner/pipeline/plan.ts';
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

  it('hands a fault owed again its input thinly near the end, a committed transaction at a time', () => {
    const txn = (n: number, commit: boolean): SeedTransaction => ({ records: [{ topic: 'in', partition: 0, key: `k${n}`, value: `v${n}`, index: n }], commit });
    const plan = () => [[txn(1, true), txn(2, true)], [txn(3, false), txn(4, true)], [txn(5, true), txn(6, true)]];
    // Far from the end, or on a first try: whole waves.
    const waves = plan();
    expect(takeWave(waves, true)).toEqual([txn(1, true), txn(2, true)]);
    expect(waves).toHaveLength(LAST_WAVES);
    expect(takeWave(plan().slice(1), false)).toHaveLength(2);
    // Near the end, owed again: up to and including one committed transaction, the rest kept.
    expect(takeWave(waves, true)).toEqual([txn(3, false), txn(4, true)]);
    expect(takeWave(waves, true)).toEqual([txn(5, true)]);
    expect(takeWave(waves, true)).toEqual([txn(6, true)]);
    expect(takeWave(waves, true)).toEqual([]);
    // Never leaves the rest of the input without a committed transaction.
    const last = [[txn(7, true), txn(8, false)]];
    expect(takeWave(last, true)).toEqual([txn(7, true), txn(8, false)]);
    expect(last).toEqual([]);
  });
});

/**
 * A kafkajs stand-in that records which transactional id wrote each transaction. `failOnce` makes
 * the first commit of that id fail as a coordinator that moved would (the transaction is still open).
 */
function fakeKafka(failOnce?: string) {
  const log: string[] = [];
  let failed = false;
  let nextOffset = 0;
  const kafka = {
    producer: ({ transactionalId }: { transactionalId: string }) => ({
      connect: async () => void log.push(`init ${transactionalId}`),
      disconnect: async () => void log.push(`close ${transactionalId}`),
      transaction: async () => ({
        sendBatch: async ({ topicMessages }: { topicMessages: { topic: string; messages: { partition: number }[] }[] }) =>
          topicMessages.flatMap(({ topic, messages }) => messages.map((m) => ({ topicName: topic, partition: m.partition, baseOffset: String(nextOffset++), errorCode: 0 }))),
        commit: async () => {
          if (transactionalId === failOnce && !failed) {
            failed = true;
            throw Object.assign(new Error('This is not the correct coordinator for this transactional id'), { type: 'NOT_COORDINATOR' });
          }
          log.push(`commit ${transactionalId}`);
        },
        abort: async () => void log.push(`abort ${transactionalId}`),
      }),
    }),
  };
  return { kafka: kafka as unknown as Kafka, log };
}

describe('the seeding producers', () => {
  const txn = (commit: boolean): SeedTransaction => ({ commit, records: [{ topic: 'in', partition: 0, key: 'k', value: 'v', index: 0 }] });

  it('take turns, so no transaction begins on the producer whose last one has just ended', async () => {
    const { kafka, log } = fakeKafka();
    const writer = new InputWriter(kafka, 'g-seeder', (t) => `ns-${t}`);
    await writer.connect({ oneLeader: true });
    await writer.write([txn(true), txn(false), txn(true), txn(true)]);
    expect(log.filter((l) => !l.startsWith('init'))).toEqual(['commit g-seeder', 'abort g-seeder-2', 'commit g-seeder-3', 'commit g-seeder']);
    expect(writer.written.map((r) => r.offset)).toEqual([0, 1, 2, 3]);
  });

  it('replace a producer whose transaction failed with a fresh one of the same id, which fences it, before the write is retried', async () => {
    const { kafka, log } = fakeKafka('g-seeder');
    const writer = new InputWriter(kafka, 'g-seeder', (t) => `ns-${t}`);
    await writer.connect({ oneLeader: true });
    log.length = 0;
    await writer.write([txn(true)]);
    expect(log).toEqual(['close g-seeder', 'init g-seeder', 'commit g-seeder-2']);
    expect(writer.written).toHaveLength(1);
  });
});
