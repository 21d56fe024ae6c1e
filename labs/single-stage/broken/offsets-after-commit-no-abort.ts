// expect-fail: no-duplicates
// Two mistakes that hide each other. The offsets are committed by the consumer after the
// transaction (a crash between the two replays a batch whose output is already committed), and a
// transaction whose send failed is never aborted: it stays open, so every later
// producer.transaction() throws and the program stops making progress until something restarts it.
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'upper-case', brokers: process.env.KAFKA_BROKERS!.split(',') });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1 });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    const txn = await producer.transaction();
    await txn.send({
      topic: process.env.OUTPUT_TOPIC!,
      messages: batch.messages.map((m) => ({ key: m.key, value: m.value!.toString().toUpperCase() })),
    });
    await txn.commit();
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
