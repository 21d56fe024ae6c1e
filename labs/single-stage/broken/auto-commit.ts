// expect-fail: no-duplicates
// No transactions at all: the consumer auto-commits offsets after each batch, the producer sends
// on its own. A crash after the send and before the auto-commit processes those records again.
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'upper-case', brokers: process.env.KAFKA_BROKERS!.split(',') });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ idempotent: true });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: true,
  eachBatch: async ({ batch }) => {
    await producer.send({
      topic: process.env.OUTPUT_TOPIC!,
      messages: batch.messages.map((m) => ({ key: m.key, value: m.value!.toString().toUpperCase() })),
    });
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
