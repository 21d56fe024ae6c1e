// expect-fail: no-loss
// One transactional.id per partition, but with the instance in it ("to keep ids unique"):
// `${prefix}-${INSTANCE_ID}-${partition}`. When partition 4 moves from i1 to i2, i2 uses a
// different id than i1 did, so its first transaction fences nobody. The frozen i1 wakes up and
// commits the batch i2 has already redone. The id must name the partition only, so that every
// owner of the partition, in any instance, uses the same one.
// On a cluster that grants ids by prefix that is the bug. This lab's attempt is granted exactly
// the ids the lab gives it (LITERAL ACLs, nothing by prefix), so the broker refuses this one
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): no transaction ever starts and nothing reaches the output.
import { Kafka, type EachBatchPayload, type Producer } from 'kafkajs';

const instanceId = process.env.INSTANCE_ID!;
// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: `fahrenheit-${instanceId}`, brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const inputTopic = process.env.INPUT_TOPIC!;
const outputTopic = process.env.OUTPUT_TOPIC!;
const groupId = process.env.GROUP_ID!;
const prefix = process.env.TRANSACTIONAL_ID_PREFIX!;

const toFahrenheit = (value: string): string =>
  value.replace(/celsius=(-?\d+)/, (_, c: string) => `fahrenheit=${((Number(c) * 9) / 5 + 32).toFixed(1)}`);

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producers = new Map<number, Producer>();

async function producerFor(partition: number): Promise<Producer> {
  let producer = producers.get(partition);
  if (!producer) {
    producer = kafka.producer({ transactionalId: `${prefix}-${instanceId}-${inputTopic}-${partition}`, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
    await producer.connect();
    await (await producer.transaction()).abort();
    producers.set(partition, producer);
  }
  return producer;
}

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  const producer = await producerFor(batch.partition);
  const transaction = await producer.transaction();
  try {
    await transaction.send({
      topic: outputTopic,
      messages: batch.messages.map((m) => ({ key: m.key, value: toFahrenheit(m.value!.toString()) })),
    });
    await transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    await transaction.commit();
  } catch (err) {
    await transaction.abort().catch(() => {});
    producers.delete(batch.partition);
    await producer.disconnect().catch(() => {});
    throw err;
  }
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart) process.exit(1);
});
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });
await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await Promise.all([...producers.values()].map((p) => p.disconnect()));
  process.exit(0);
});
