// Single-stage pipeline, at-least-once version. It works until something crashes.
// Your job: make it exactly-once with a transactional producer. Look for the TODOs.
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'upper-case', brokers: process.env.KAFKA_BROKERS!.split(',') });
const inputTopic = process.env.INPUT_TOPIC!;
const outputTopic = process.env.OUTPUT_TOPIC!;

const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
// TODO: give the producer the lab's TRANSACTIONAL_ID (and idempotence) so it can use transactions.
const producer = kafka.producer();

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });

await consumer.run({
  // TODO: offsets must be committed inside the transaction, not by the consumer on its own.
  autoCommit: true,
  eachMessage: async ({ message }) => {
    // TODO: open a transaction, send, add the consumed offset (offset + 1) with sendOffsets, commit.
    await producer.send({
      topic: outputTopic,
      messages: [{ key: message.key, value: message.value?.toString().toUpperCase() ?? null }],
    });
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
