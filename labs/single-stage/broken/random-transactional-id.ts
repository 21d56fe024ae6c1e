// expect-fail: no-loss
// A fresh transactional.id on every start (TRANSACTIONAL_ID plus a random suffix), so a restarted
// instance cannot fence its predecessor. A killed instance's open transaction then holds back every
// read_committed reader until the coordinator aborts it at kafkajs's default 60 s timeout, longer
// than the grader waits (20 s): the output downstream readers see stops there, which no-loss
// reports with the open transaction as evidence. (A zombie that was never fenced can also commit a
// batch twice; that shows only on the seeds where a zombie fault lands before its batch was redone.)
import { randomUUID } from 'node:crypto';
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'upper-case', brokers: process.env.KAFKA_BROKERS!.split(',') });
const groupId = process.env.GROUP_ID!;
const consumer = kafka.consumer({ groupId });
const producer = kafka.producer({ transactionalId: `${process.env.TRANSACTIONAL_ID}-${randomUUID()}`, idempotent: true, maxInFlightRequests: 1 });

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
      await txn.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }] }],
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
