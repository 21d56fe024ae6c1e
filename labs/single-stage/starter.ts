// Single-stage pipeline, at-least-once version. It works until something crashes.
// Your job: make it exactly-once with a transactional producer. Look for the TODOs in the section
// "pipeline" below (the lesson "Single-stage exactly-once pipelines" shows what can take its place).
import { Kafka } from 'kafkajs';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`missing environment variable ${name}`);
  return value;
}

const INPUT_TOPIC = env('INPUT_TOPIC');
const OUTPUT_TOPIC = env('OUTPUT_TOPIC');
const GROUP_ID = env('GROUP_ID');

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'upper-case', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });

// ---- pipeline: consume, upper-case, produce -----------------------------------------------------
const consumer = kafka.consumer({ groupId: GROUP_ID });
// TODO: give the producer the lab's TRANSACTIONAL_ID (and idempotence, and its own retry count) so
// it can use transactions.
const producer = kafka.producer();

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: INPUT_TOPIC, fromBeginning: true });

await consumer.run({
  // TODO: offsets must be committed inside the transaction, not by the consumer on its own.
  autoCommit: true,
  eachMessage: async ({ message }) => {
    // TODO: open a transaction, send, add the consumed offset (offset + 1) with sendOffsets, commit.
    await producer.send({
      topic: OUTPUT_TOPIC,
      messages: [{ key: message.key, value: message.value?.toString().toUpperCase() ?? null }],
    });
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
