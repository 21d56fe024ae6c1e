// expect-fail: no-duplicates
// No transactions at all: the consumer auto-commits offsets after each batch, the producer sends
// on its own. A crash after the send and before the auto-commit processes those records again.
import { Kafka } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'upper-case', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ idempotent: true, retry: { retries: Number.MAX_SAFE_INTEGER } });

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
