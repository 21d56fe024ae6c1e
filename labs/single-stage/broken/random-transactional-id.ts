// expect-fail: no-hanging-transactions
// A new random transactional.id on every start: a restarted instance cannot fence its
// predecessor, so a killed instance leaves its transaction open until the timeout (every grade
// shows it), and a paused "zombie" commits its transaction after the replacement redid the work.
// The duplicates that zombie leaves are usually visible too, but not when the hanging transaction
// sits in front of them: read_committed readers, the verifier included, stop at its LSO.
import { randomUUID } from 'node:crypto';
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'upper-case', brokers: process.env.KAFKA_BROKERS!.split(',') });
const groupId = process.env.GROUP_ID!;
const consumer = kafka.consumer({ groupId });
// Still inside the attempt's namespace (the broker allows no other transactional ids), but a new
// one on every start.
const producer = kafka.producer({ transactionalId: `${process.env.TRANSACTIONAL_ID!}-${randomUUID()}`, idempotent: true, maxInFlightRequests: 1 });

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
