/**
 * What kafkajs 2.2.4 puts on the wire, for claims the lessons make (10.1.1, 10.1.4, 10.1.5, 10.1.10):
 *
 * (a) On one broker, a transactional send() to several partitions is one Produce request, so the
 *     several-leaders retry problem of a cluster (lesson 10.1.5) cannot occur on the lab broker.
 * (b) connect() of an idempotent producer sends an InitProducerId without the transactional id; it
 *     fences nobody. The transactional InitProducerId, which fences, comes with the first
 *     transaction().
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
