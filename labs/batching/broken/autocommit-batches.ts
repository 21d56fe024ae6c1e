// expect-fail: no-duplicates
// The fastest pipeline of all: no transactions, one idempotent send per fetched batch, and the
// consumer commits offsets on its own after each batch. Idempotence only stops the producer's
// own retries from duplicating; a crash after the send and before the offset commit makes the
// restarted instance process the batch, and write its lines, a second time.
import { Kafka } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'page-views', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
const toCsv = (v: { id: string; user: string; page: string; ms: number }) => `${v.id},${v.user},${v.page},${v.ms}`;

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: true,
  eachBatch: async ({ batch }) => {
    if (batch.messages.length === 0) return;
    await producer.send({
      topic: process.env.OUTPUT_TOPIC!,
      messages: batch.messages.map((m) => ({ key: m.key, value: toCsv(JSON.parse(m.value!.toString())) })),
    });
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
