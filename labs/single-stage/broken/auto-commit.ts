// expect-fail: no-duplicates
// No transactions at all: the producer sends on its own (idempotent, which only keeps a retried
// send from being written twice), and the consumer auto-commits the offsets of each batch after
// it. A crash after the send and before the auto-commit processes those records again.
// Whole program: without transactions there is no transactional id to fence with, no sendOffsets,
// no commit and no abort, so nearly all of the solution's pipeline would go rather than change.
import { Kafka } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'upper-case', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const inputTopic = env('INPUT_TOPIC');
const outputTopic = env('OUTPUT_TOPIC');
const groupId = env('GROUP_ID');

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });

await consumer.run({
  autoCommit: true,
  eachBatch: async ({ batch }) => {
    await producer.send({
      topic: outputTopic,
      messages: batch.messages.map((m) => ({ key: m.key, value: m.value?.toString().toUpperCase() ?? null })),
    });
  },
});

const shutdown = async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
