// expect-fail: keeps-up
// Offsets go into the transaction as they should, but a transaction whose send failed is never
// aborted. kafkajs retries the batch, and every producer.transaction() after that throws ("there is
// already an ongoing transaction"): the program is alive, connected and doing nothing, with input
// waiting, until something restarts it. Like most services it also does other work (here a status
// line every 5 s; in production a metrics or health endpoint), which keeps the process up after its
// consumer has stopped. (Without it the process may exit by itself once its consumer has
// disconnected, and a supervisor's restart hides the wedge: a grade could then pass.)
import { Kafka } from 'kafkajs';

const groupId = process.env.GROUP_ID!;
// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'upper-case', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
let committedBatches = 0;
setInterval(() => console.log(`status: ${committedBatches} batches committed`), 5_000);
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    const txn = await producer.transaction();
    await txn.send({
      topic: process.env.OUTPUT_TOPIC!,
      messages: batch.messages.map((m) => ({ key: m.key, value: m.value!.toString().toUpperCase() })),
    });
    await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }] }] });
    await txn.commit();
    resolveOffset(batch.lastOffset());
    committedBatches++;
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
