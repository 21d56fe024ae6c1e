// expect-fail: no-duplicates
// The output is transactional, but the offsets are committed by the consumer AFTER the
// transaction: a crash between the two re-processes a batch whose output is already committed.
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'copier', brokers: process.env.KAFKA_BROKERS!.split(',') });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1 });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    const txn = await producer.transaction();
    try {
      await txn.send({
        topic: process.env.OUTPUT_TOPIC!,
        messages: batch.messages.map((m) => ({ key: m.key, value: m.value })),
      });
      await txn.commit();
    } catch (err) {
      await txn.abort();
      throw err;
    }
    const next = String(Number(batch.lastOffset()) + 1);
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }]);
    resolveOffset(batch.lastOffset());
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
