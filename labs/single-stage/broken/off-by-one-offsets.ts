// expect-fail: offsets-consistent
// Commits the offset of the last record it processed instead of the NEXT one to read, so the
// group always points one record back, and a restart processes that record again.
// (batch.lastOffset() would hide the bug when a transaction marker ends the batch; a record's own
// offset does not.)
import { Kafka } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'upper-case', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const groupId = process.env.GROUP_ID!;
const consumer = kafka.consumer({ groupId });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    const txn = await producer.transaction();
    try {
      await txn.send({
        topic: process.env.OUTPUT_TOPIC!,
        messages: batch.messages.map((m) => ({ key: m.key, value: m.value!.toString().toUpperCase() })),
      });
      const lastRecord = batch.messages[batch.messages.length - 1]!;
      await txn.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: lastRecord.offset }] }],
      });
      await txn.commit();
    } catch (err) {
      await txn.abort();
      throw err;
    }
    resolveOffset(batch.lastOffset());
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
