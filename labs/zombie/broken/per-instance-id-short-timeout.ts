// expect-fail: no-duplicates
// One transactional.id per instance, with a short transactionTimeout. Frozen inside a transaction,
// it looks safe: the broker expires the transaction before the instance wakes, so its commit fails
// and nothing needed fencing. Frozen between two transactions it is not: it wakes with batches of
// partitions the group has since given to others, opens a new transaction under its own id (which
// nobody fenced) and commits them again; kafkajs's sendOffsets carries no group generation.
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
// A short transaction timeout: a transaction frozen for longer than 5 s is expired by the broker.
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, transactionTimeout: 5_000, retry: { retries: Number.MAX_SAFE_INTEGER } });

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
