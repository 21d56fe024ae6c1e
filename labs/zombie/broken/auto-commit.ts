// expect-fail: no-duplicates
// No transactions at all: an idempotent producer and the consumer's automatic offset commits.
// Idempotence only removes duplicates caused by the producer's own retries. When an instance
// freezes after sending, its outputs are already visible and its offsets are not committed: the
// instance that takes the partition over converts the same readings again.
import { Kafka } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: `fahrenheit-${process.env.INSTANCE_ID}`, brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const outputTopic = process.env.OUTPUT_TOPIC!;

const toFahrenheit = (value: string): string =>
  value.replace(/celsius=(-?\d+)/, (_, c: string) => `fahrenheit=${((Number(c) * 9) / 5 + 32).toFixed(1)}`);

const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: true,
  eachBatch: async ({ batch }) => {
    await producer.send({
      topic: outputTopic,
      messages: batch.messages.map((m) => ({ key: m.key, value: toFahrenheit(m.value!.toString()) })),
    });
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
