// expect-fail: no-duplicates
// The fastest pipeline of all: no transactions, one idempotent send per fetched batch, and the
// consumer commits offsets on its own after each batch. Idempotence only stops the producer's
// own retries from duplicating; a crash after the send and before the offset commit makes the
// restarted instance process the batch, and write its lines, a second time.
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'page-views', brokers: process.env.KAFKA_BROKERS!.split(',') });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
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
