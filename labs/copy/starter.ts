// Copies the partition at least once. Make it exactly once: see the TODOs in the sections
// "producer" and "loop" below (the lesson "Producer transactions in kafkajs" shows what can take
// their place).
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
const kafka = new Kafka({ clientId: 'copier', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });

// ---- producer: created, connected, and (TODO) fencing the previous instance --------------------
// TODO: a transactional producer (TRANSACTIONAL_ID, idempotent, maxInFlightRequests: 1, its own
// retry count), which fences the previous instance before the consumer reads any offset.
const producer = kafka.producer();
await producer.connect();

// ---- loop: read, copy, commit --------------------------------------------------------------------
const consumer = kafka.consumer({ groupId: GROUP_ID });
await consumer.connect();
await consumer.subscribe({ topic: INPUT_TOPIC, fromBeginning: true });

await consumer.run({
  // TODO: commit offsets inside the transaction with sendOffsets, not automatically.
  autoCommit: true,
  eachMessage: async ({ message }) => {
    // TODO: send and sendOffsets in one transaction, then commit it.
    await producer.send({ topic: OUTPUT_TOPIC, messages: [{ key: message.key, value: message.value }] });
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
