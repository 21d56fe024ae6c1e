// expect-fail: no-duplicates
// No transactions at all: an idempotent producer and the consumer's automatic offset commits.
// Idempotence only removes duplicates caused by the producer's own retries. When an instance
// freezes after sending, its outputs are already visible and its offsets are not committed: the
// instance that takes the partition over converts the same readings again.
// Whole program: the solution is built around one transactional producer per input partition
// (fencing, offsets inside the transaction); a pipeline with no transactions keeps none of it.
import { Kafka } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const instanceId = env('INSTANCE_ID');
// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: `fahrenheit-${instanceId}`, brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const inputTopic = env('INPUT_TOPIC');
const outputTopic = env('OUTPUT_TOPIC');
const groupId = env('GROUP_ID');

/** "r-00003 sensor=k003 celsius=11" -> "r-00003 sensor=k003 fahrenheit=51.8" */
const toFahrenheit = (value: string): string =>
  value.replace(/celsius=(-?\d+)/, (_, c: string) => `fahrenheit=${((Number(c) * 9) / 5 + 32).toFixed(1)}`);

const consumer = kafka.consumer({ groupId });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

// kafkajs gave up on an error it will not retry: exit and let the supervisor start us afresh.
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart) {
    console.error(`${instanceId}: consumer stopped: ${payload.error.message}`);
    process.exit(1);
  }
});

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });
await consumer.run({
  autoCommit: true,
  eachBatch: async ({ batch }) => {
    await producer.send({
      topic: outputTopic,
      messages: batch.messages.map((m) => ({ key: m.key, value: toFahrenheit(m.value!.toString()) })),
    });
  },
});

const shutdown = async () => {
  await consumer.disconnect().catch(() => {});
  await producer.disconnect().catch(() => {});
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
