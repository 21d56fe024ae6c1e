// expect-fail: no-loss
// Mistake: the single-broker exactly-once program, unchanged. When a commit fails it aborts and
// rethrows so that kafkajs delivers the batch again, and it keeps the same producer. After a failed
// commit() kafkajs cannot abort (the transaction "has ended") and cannot begin another one either
// (the producer stays in state COMMITTING), so every redelivery fails until the consumer gives up,
// and the process sits there, alive and idle, while orders pile up.
import { Kafka, type EachBatchPayload } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const kafka = new Kafka({ clientId: 'order-pricer', brokers: env('KAFKA_BROKERS').split(',') });
const ordersTopic = env('ORDERS_TOPIC');
const pricedTopic = env('PRICED_TOPIC');
const groupId = env('GROUP_ID');

const PRICES_CENTS: Record<string, number> = { tea: 450, coffee: 320, cake: 275, juice: 390, bagel: 210 };
const price = (line: string) => {
  const [, quantity, , product] = line.split(' ');
  return `${line} = ${((Number(quantity) * PRICES_CENTS[product!]!) / 100).toFixed(2)}`;
};

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1 });

await producer.connect();
await (await producer.transaction()).abort(); // fence before reading offsets
await consumer.connect();
await consumer.subscribe({ topic: ordersTopic, fromBeginning: true });

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  if (batch.messages.length === 0) return;
  const transaction = await producer.transaction();
  try {
    await transaction.send({
      topic: pricedTopic,
      messages: batch.messages.map((m) => ({ key: m.key, value: price(m.value!.toString()) })),
    });
    await transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    await transaction.commit();
  } catch (err) {
    await transaction.abort().catch(() => {});
    throw err; // kafkajs retries the batch
  }
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

consumer.on(consumer.events.CRASH, ({ payload }) => console.error(`consumer crashed (restart: ${payload.restart}): ${payload.error.message}`));

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
