// Exactly-once copy of one partition: every batch is one transaction holding the copied records
// and the consumer offset that follows them.
import { Kafka, type KafkaMessage } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

/** The lab's transform: the output record for one input record (a copy: the same key, value and headers). */
const outputOf = (m: KafkaMessage) => ({ key: m.key, value: m.value, headers: m.headers });

const groupId = env('GROUP_ID');
// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'copier', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
// kafkajs registers the transactional.id (InitProducerId) at the first transaction, not at connect.
// Do it now, before the consumer reads its committed offsets: this fences any older instance with
// our id and aborts its open transaction, so the offsets we resume from are final.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: env('INPUT_TOPIC'), fromBeginning: true });

// The next offset to read on each partition, as far as this process has committed. After a
// rebalance (a broker restart causes one) kafkajs reads the group's committed offsets again, and
// the answer can predate our last commit: its offsets become visible when the commit markers
// reach __consumer_offsets, a moment after commit() returned. Skip what we know is done.
const doneUpTo = new Map<number, bigint>();

await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
    // Skip what this process already committed (see doneUpTo).
    const messages = batch.messages.filter((m) => BigInt(m.offset) >= (doneUpTo.get(batch.partition) ?? 0n));
    if (messages.length === 0) {
      if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
      return;
    }
    const txn = await producer.transaction();
    let committing = false;
    try {
      await txn.send({
        topic: env('OUTPUT_TOPIC'),
        messages: messages.map(outputOf),
      });
      await txn.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }] }],
      });
      committing = true;
      await txn.commit();
    } catch (err) {
      // A failed commit() may have committed all the same (the coordinator decided before the reply
      // was lost, in a broker restart say), and kafkajs can abort neither then nor after a failed
      // abort. Redoing the batch from memory could write it twice: exit, and the fresh start fences
      // our transactional id, which settles that transaction, then reads the committed offsets.
      if (committing || !(await txn.abort().then(() => true, () => false))) {
        console.error(`transaction outcome unknown (${(err as Error).message}): restarting afresh`);
        process.exit(1);
      }
      throw err;
    }
    doneUpTo.set(batch.partition, BigInt(batch.lastOffset()) + 1n);
    resolveOffset(batch.lastOffset());
    await heartbeat();
    console.log(`copied ${messages.length} records, next offset ${Number(batch.lastOffset()) + 1}`);
  },
});

consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart || /fenced|old epoch/i.test(payload.error.message)) {
    console.error(`stopping: ${payload.error.message}`);
    process.exit(1);
  }
});

const shutdown = async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
