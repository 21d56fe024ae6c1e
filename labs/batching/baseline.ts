// The grader's yardstick for the batching lab, not a solution to copy: a CORRECT exactly-once
// pipeline that opens one transaction per record. The grader times it on a burst of records in
// the same grade as your program; yours must be a stated multiple faster, and still exactly once.
//
// It is a fair yardstick: its producer retries CONCURRENT_TRANSACTIONS after 10 ms instead of the
// lab's 100 ms default (see the lesson), so per-record transactions run as fast as they can here
// and only putting many records into each transaction beats it by a wide margin.
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
const kafka = new Kafka({ clientId: 'page-views-baseline', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const groupId = env('GROUP_ID');
const outputTopic = env('OUTPUT_TOPIC');

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({
  transactionalId: env('TRANSACTIONAL_ID'),
  idempotent: true,
  maxInFlightRequests: 1,
  retry: { initialRetryTime: 10, maxRetryTime: 1_000, retries: Number.MAX_SAFE_INTEGER },
});

interface PageView {
  id: string;
  user: string;
  page: string;
  ms: number;
}
const toCsv = (v: PageView) => `${v.id},${v.user},${v.page},${v.ms}`;

await producer.connect();
await (await producer.transaction()).abort(); // fence a predecessor before reading offsets
await consumer.connect();
await consumer.subscribe({ topic: env('INPUT_TOPIC'), fromBeginning: true });

await consumer.run({
  autoCommit: false,
  eachMessage: async ({ topic, partition, message }) => {
    const txn = await producer.transaction();
    try {
      await txn.send({ topic: outputTopic, messages: [{ key: message.key, value: toCsv(JSON.parse(message.value!.toString())) }] });
      await txn.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic, partitions: [{ partition, offset: (BigInt(message.offset) + 1n).toString() }] }],
      });
      await txn.commit();
    } catch (err) {
      await txn.abort().catch(() => {});
      throw err;
    }
  },
});

consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart) process.exit(1);
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
