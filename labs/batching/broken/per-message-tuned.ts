// expect-fail: throughput-speedup
// Exactly once and carefully tuned, but still one transaction per record: a short retry backoff
// (so the next transaction does not wait long on CONCURRENT_TRANSACTIONS) and minBytes/maxWait on
// the fetch change nothing about the fixed cost every record pays. This is as fast as the
// baseline, not several times faster.
import { Kafka } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'page-views', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const groupId = process.env.GROUP_ID!;
const consumer = kafka.consumer({ groupId, minBytes: 1_024, maxWaitTimeInMs: 50 });
const producer = kafka.producer({
  transactionalId: process.env.TRANSACTIONAL_ID!,
  idempotent: true,
  maxInFlightRequests: 1,
  retry: { initialRetryTime: 10, maxRetryTime: 1_000, retries: Number.MAX_SAFE_INTEGER },
});
const toCsv = (v: { id: string; user: string; page: string; ms: number }) => `${v.id},${v.user},${v.page},${v.ms}`;

await producer.connect();
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
    // A batch in hand, and still a transaction per record.
    for (const message of batch.messages) {
      const txn = await producer.transaction();
      try {
        await txn.send({ topic: process.env.OUTPUT_TOPIC!, messages: [{ key: message.key, value: toCsv(JSON.parse(message.value!.toString())) }] });
        await txn.sendOffsets({
          consumerGroupId: groupId,
          topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(message.offset) + 1n).toString() }] }],
        });
        await txn.commit();
      } catch (err) {
        await txn.abort().catch(() => {});
        throw err;
      }
      resolveOffset(message.offset);
      await heartbeat();
    }
  },
});
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (/fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(String(payload.error?.message)) || !payload.restart) process.exit(1);
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
