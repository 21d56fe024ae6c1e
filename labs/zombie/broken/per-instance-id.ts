// expect-fail: no-duplicates
// One transactional.id per INSTANCE (TRANSACTIONAL_ID), as in a single-instance pipeline. It fences a
// restarted copy of the same instance, but not an instance that was rebalanced away: when a frozen
// instance wakes up, nobody has used its id, so its transaction (outputs and offsets of a batch the
// new owner of the partition has already redone) commits. kafkajs's sendOffsets carries no group
// generation, so the group coordinator accepts those offsets too.
import { Kafka, type EachBatchPayload } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: `fahrenheit-${process.env.INSTANCE_ID}`, brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const inputTopic = process.env.INPUT_TOPIC!;
const outputTopic = process.env.OUTPUT_TOPIC!;
const groupId = process.env.GROUP_ID!;

const toFahrenheit = (value: string): string =>
  value.replace(/celsius=(-?\d+)/, (_, c: string) => `fahrenheit=${((Number(c) * 9) / 5 + 32).toFixed(1)}`);

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
await (await producer.transaction()).abort(); // fences a previous run of THIS instance only
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
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
    throw err;
  }
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart) process.exit(1);
});
await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
