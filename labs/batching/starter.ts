// Page views to CSV, exactly once: correct, but it opens one transaction per record, so every
// record pays the whole fixed cost of a transaction. Keep it exactly once and make it at least
// 5x faster than this by putting many records into each transaction. Look for the TODOs.
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
const kafka = new Kafka({ clientId: 'page-views', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const groupId = env('GROUP_ID');
const outputTopic = env('OUTPUT_TOPIC');

interface PageView {
  id: string;
  user: string;
  page: string;
  ms: number;
}
const toCsv = (v: PageView) => `${v.id},${v.user},${v.page},${v.ms}`;

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
await (await producer.transaction()).abort(); // fence an older instance before reading offsets
await consumer.connect();
await consumer.subscribe({ topic: env('INPUT_TOPIC'), fromBeginning: true });

await consumer.run({
  autoCommit: false,
  // TODO: eachMessage gets one record at a time. eachBatch gets everything one fetch returned for
  // a partition: open ONE transaction for the whole batch (set eachBatchAutoResolve: false and
  // call resolveOffset after the commit).
  eachMessage: async ({ topic, partition, message }) => {
    const txn = await producer.transaction();
    try {
      // TODO: one send with all the batch's lines instead of one send per record.
      await txn.send({ topic: outputTopic, messages: [{ key: message.key, value: toCsv(JSON.parse(message.value!.toString())) }] });
      // TODO: one sendOffsets per batch: the offset after the batch's last record.
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

const isFenced = (err: unknown) =>
  /fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(`${(err as { type?: string })?.type} ${(err as Error)?.message}`);
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (isFenced(payload.error) || !payload.restart) process.exit(1);
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
