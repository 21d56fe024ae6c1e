/**
 * The __transaction_state decoder of the monitoring lab's grader against the real broker's own
 * records. Hand-built records and the alert rules need no broker: tests/unit/transaction-log.test.ts
 * and tests/unit/monitor-alerts.test.ts. The whole grade runs in the lab matrix (tests/support/labs-matrix.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin } from 'kafkajs';
import { decodeTransactionLogRecord, TRANSACTION_STATE_TOPIC } from '../lab-server/kafka/transaction-log.ts';
import { testKafka, uniqueName } from './support/kafka.ts';

describe('__transaction_state on the real broker', () => {
  const kafka = testKafka('monitor-grading');
  let admin: Admin;
  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
  });
  afterAll(async () => {
    await admin.disconnect();
  });

  it('decodes the coordinator records of one transactional id through Empty, Ongoing (with its partitions) and commit', async () => {
    const topic = uniqueName('txlog');
    const transactionalId = uniqueName('txlog-id');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const from = await admin.fetchTopicOffsets(TRANSACTION_STATE_TOPIC);
    const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 45_000 });
    await producer.connect();
    const before = Date.now();
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [{ value: 'a', partition: 1 }] });
    await txn.commit();
    await producer.disconnect();

    const consumer = kafka.consumer({ groupId: uniqueName('txlog-reader'), maxWaitTimeInMs: 100 });
    const states: NonNullable<ReturnType<typeof decodeTransactionLogRecord>>[] = [];
    let seenCommit: () => void = () => {};
    const committed = new Promise<void>((resolve) => (seenCommit = resolve));
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: TRANSACTION_STATE_TOPIC, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            const record = decodeTransactionLogRecord(m.key, m.value);
            if (record?.transactionalId !== transactionalId) continue;
            states.push(record);
            if (record.value?.state === 'CompleteCommit') seenCommit();
          }
        },
      });
      for (const p of from) consumer.seek({ topic: TRANSACTION_STATE_TOPIC, partition: p.partition, offset: p.offset });
      await Promise.race([committed, new Promise((_, reject) => setTimeout(() => reject(new Error(`no CompleteCommit; saw ${states.map((s) => s.value?.state)}`)), 20_000))]);
    } finally {
      await consumer.disconnect();
    }

    const names = states.map((s) => s.value!.state);
    expect(names).toEqual(['Empty', 'Ongoing', 'PrepareCommit', 'CompleteCommit']);
    const [empty, ongoing] = states.map((s) => s.value!);
    expect(empty!.startMs).toBeNull();
    expect(empty!.timeoutMs).toBe(45_000);
    expect(ongoing!.partitions).toEqual([{ topic, partitions: [1] }]);
    expect(ongoing!.startMs).toBeGreaterThanOrEqual(before - 1_000);
    expect(ongoing!.startMs).toBeLessThanOrEqual(Date.now());
    expect(ongoing!.producerId).toBe(empty!.producerId);
    expect(states.at(-1)!.value!.partitions).toEqual([]);
  });
});
