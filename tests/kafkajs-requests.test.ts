/**
 * What kafkajs 2.2.4 puts on the wire, for claims the lessons make (10.1.1, 10.1.4, 10.1.5, 10.1.10):
 *
 * (a) On one broker, a transactional send() to several partitions is one Produce request, so the
 *     several-leaders retry problem of a cluster (lesson 10.1.5) cannot occur on the lab broker.
 * (b) connect() of an idempotent producer sends an InitProducerId without the transactional id; it
 *     fences nobody. The transactional InitProducerId, which fences, comes with the first
 *     transaction().
 * (c) Our patch (patches/kafkajs+2.2.4.patch): the producer remembers its transaction coordinator
 *     and its consumer group's coordinator. Stock 2.2.4 sends a FindCoordinator before each of
 *     AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn, four per transaction.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin, Producer } from 'kafkajs';
import { testKafka, uniqueName } from './support/kafka.ts';

const kafka = testKafka('kafkajs-requests');
let admin: Admin;
const producers: Producer[] = [];

type Request = { apiName: string; broker: string };

/** A transactional producer that records every request it completes. */
function recordingProducer(transactionalId: string) {
  const producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  producers.push(producer);
  const requests: Request[] = [];
  producer.on(producer.events.REQUEST, ({ payload }) => requests.push({ apiName: payload.apiName, broker: payload.broker }));
  return { producer, requests };
}

const named = (requests: Request[], apiName: string) => requests.filter((r) => r.apiName === apiName);

beforeAll(async () => {
  admin = kafka.admin();
  await admin.connect();
});

afterAll(async () => {
  await Promise.all(producers.map((p) => p.disconnect().catch(() => {})));
  await admin.disconnect();
});

describe('kafkajs requests on the lab broker', () => {
  it('(a) sends one Produce request for a send() that spans three partitions of one broker', async () => {
    const topic = uniqueName('one-request');
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });
    const { producer, requests } = recordingProducer(uniqueName('tx-one-request'));
    await producer.connect();
    const txn = await producer.transaction();
    const before = named(requests, 'Produce').length;
    await txn.send({ topic, messages: [0, 1, 2].flatMap((partition) => [{ value: `a${partition}`, partition }, { value: `b${partition}`, partition }]) });
    const produce = named(requests, 'Produce').slice(before);
    await txn.commit();
    expect(produce).toHaveLength(1);
    // And the records really did go to three partitions.
    const offsets = await admin.fetchTopicOffsets(topic);
    expect(offsets.map((o) => Number(o.high)).every((high) => high >= 2)).toBe(true);
  });

  it('(c) finds its transaction coordinator and its group coordinator once, not four times a transaction', async () => {
    const topic = uniqueName('coordinators');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }], waitForLeaders: true });
    const { producer, requests } = recordingProducer(uniqueName('tx-coordinators'));
    await producer.connect();
    const groupId = uniqueName('group-coordinators');
    for (let i = 0; i < 3; i++) {
      const txn = await producer.transaction();
      await txn.send({ topic, messages: [{ value: `v${i}`, partition: i % 2 }] });
      await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: String(i + 1) }] }] });
      if (i === 1) await txn.abort();
      else await txn.commit();
    }
    // AddPartitionsToTxn may go twice: the broker answers CONCURRENT_TRANSACTIONS while the last
    // transaction's markers are being written, and kafkajs sends it again. A failed request makes
    // the producer find its coordinator afresh (FindCoordinator is 'GroupCoordinator' in kafkajs).
    const retried = named(requests, 'AddPartitionsToTxn').length - 3;
    expect(retried).toBeGreaterThanOrEqual(0);
    for (const apiName of ['AddOffsetsToTxn', 'TxnOffsetCommit', 'EndTxn']) expect(named(requests, apiName), apiName).toHaveLength(3);
    // One for the transaction coordinator, one for the group's, one after each failed request
    // (stock 2.2.4: 1 + 4 x 3 = 13, and one more for each retried AddPartitionsToTxn).
    expect(named(requests, 'GroupCoordinator')).toHaveLength(2 + retried);
    // The committed offsets went to the group's coordinator all the same.
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [topic] });
    expect(offsets!.partitions.find((p) => p.partition === 0)?.offset).toBe('3');
  });

  it('(b) connect() sends a non-transactional InitProducerId that fences nobody; transaction() fences', async () => {
    const topic = uniqueName('init-pid');
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    const transactionalId = uniqueName('tx-init-pid');
    const first = recordingProducer(transactionalId);
    await first.producer.connect();
    const open = await first.producer.transaction();
    await open.send({ topic, messages: [{ value: 'from-first' }] });

    // A second producer with the same transactional id connects: kafkajs sends InitProducerId...
    const second = recordingProducer(transactionalId);
    await second.producer.connect();
    expect(named(second.requests, 'InitProducerId')).toHaveLength(1);
    // ...but without the transactional id, so the first producer's open transaction is untouched
    // and commits.
    await open.commit();

    // The first transaction() of the second producer is the transactional InitProducerId: it
    // bumps the epoch, and the first producer is fenced from then on.
    const fencing = await second.producer.transaction();
    // (More than one when the coordinator answers CONCURRENT_TRANSACTIONS while the first
    // producer's commit markers are still being written: kafkajs retries.)
    expect(named(second.requests, 'InitProducerId').length).toBeGreaterThanOrEqual(2);
    await fencing.abort();
    const stale = await first.producer.transaction();
    const error = await stale.send({ topic, messages: [{ value: 'zombie' }] }).then(
      () => null,
      (e: { type?: string; message: string }) => e,
    );
    expect(error).not.toBeNull();
    expect(`${error!.type} ${error!.message}`).toMatch(/INVALID_PRODUCER_EPOCH|PRODUCER_FENCED|epoch/i);
  });
});
