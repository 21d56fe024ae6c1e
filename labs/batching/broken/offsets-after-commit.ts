// expect-fail: no-duplicates
// Batches nicely (one transaction per fetched batch), but commits the input offsets with the
// consumer AFTER the transaction instead of inside it. A crash between the two leaves a whole
// batch committed in the output but not in the group: the restarted instance writes it again.
import { Kafka } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'page-views', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
const toCsv = (v: { id: string; user: string; page: string; ms: number }) => `${v.id},${v.user},${v.page},${v.ms}`;

await producer.connect();
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    if (batch.messages.length === 0) return;
    const txn = await producer.transaction();
    try {
      await txn.send({
        topic: process.env.OUTPUT_TOPIC!,
        messages: batch.messages.map((m) => ({ key: m.key, value: toCsv(JSON.parse(m.value!.toString())) })),
      });
      await txn.commit();
    } catch (err) {
      await txn.abort().catch(() => {});
      throw err;
    }
    // Too late: the output above is already committed, and this commit is a separate step.
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }]);
    resolveOffset(batch.lastOffset());
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
