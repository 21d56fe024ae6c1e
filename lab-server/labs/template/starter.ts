// Copies the partition at least once. Make it exactly once: see the TODOs.
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'copier', brokers: process.env.KAFKA_BROKERS!.split(',') });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
// TODO: a transactional producer (TRANSACTIONAL_ID, idempotent, maxInFlightRequests: 1).
const producer = kafka.producer();

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });

await consumer.run({
  // TODO: commit offsets inside the transaction with sendOffsets, not automatically.
  autoCommit: true,
  eachMessage: async ({ message }) => {
    // TODO: send and sendOffsets in one transaction, then commit it.
    await producer.send({ topic: process.env.OUTPUT_TOPIC!, messages: [{ key: message.key, value: message.value }] });
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
