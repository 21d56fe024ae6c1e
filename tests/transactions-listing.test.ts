/**
 * The grader's view of a namespace's transactions (lab-server/kafka/transactions.ts: Kafka's
 * ListTransactions and DescribeTransactions over @platformatic/kafka's protocol layer), on the
 * real broker: what `inspect txns`, the wait for abandoned transactions and the fencing of an
 * attempt's ids read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin, Producer } from 'kafkajs';
import { listTransactions } from '../lab-server/kafka/transactions.ts';
import { testKafka, uniqueName } from './support/kafka.ts';
import { testBrokers } from './support/brokers.ts';

const kafka = testKafka('transactions-listing');
const brokers = testBrokers();
let admin: Admin;
let producer: Producer;
const namespace = uniqueName('txl');
const topic = `${namespace}-out`;

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
  producer = kafka.producer({ transactionalId: `${namespace}-tx-1`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 45_000 });
  await producer.connect();
});

afterAll(async () => {
  await producer?.disconnect();
  await admin?.deleteTopics({ topics: [topic] }).catch(() => undefined); // the broker sweeps it at the next start anyway
  await admin?.disconnect();
});

describe('listing the transactions of a namespace', () => {
  it('shows an open transaction with its partitions and timeout, then its commit, and only ids of the prefix', async () => {
    const txn = await producer.transaction();
    await txn.send({ topic, messages: [0, 1, 2].map((partition) => ({ partition, key: `k${partition}`, value: 'v' })) });

    const open = await listTransactions(brokers, namespace);
    expect(open.map((t) => t.transactionalId)).toEqual([`${namespace}-tx-1`]);
    expect(open[0]).toMatchObject({ state: 'Ongoing', timeoutMs: 45_000 });
    expect(open[0]!.partitions.sort()).toEqual([0, 1, 2].map((p) => `${topic}-${p}`));
    expect(open[0]!.startedAt).not.toBeNull();
    expect(open[0]!.durationMs).toBeGreaterThanOrEqual(0);
    expect(open[0]!.producerId).toBeGreaterThanOrEqual(0);

    await txn.commit();
    const after = await listTransactions(brokers, namespace);
    expect(after.map((t) => t.state)).toEqual([expect.stringMatching(/^(PrepareCommit|CompleteCommit)$/)]);
    expect(await listTransactions(brokers, `${namespace}-nobody`)).toEqual([]);
  });

  it('refuses a prefix that is not a namespace, and names the fix when no broker answers', async () => {
    await expect(listTransactions(brokers, 'a b')).rejects.toThrow(/Not a transactional-id prefix/);
    const started = Date.now();
    await expect(listTransactions(['127.0.0.1:1'], namespace)).rejects.toThrow(/did not answer .*is Kafka running\?/);
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);
});
