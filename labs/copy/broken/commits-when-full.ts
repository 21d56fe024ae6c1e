// expect-fail: no-hanging-transactions
// Batches for speed: one Kafka transaction takes batch after batch, and the batch that
// finds it holding COMMIT_EVERY records commits it before opening the next. Nothing else ever
// commits: no timer, no flush when the input goes quiet. COMMIT_EVERY is sized for production
// traffic; this lab's input never fills it, so the open transaction, holding the records sent so
// far, stays open while the idle copier waits for more input, and every read_committed reader of
// OUTPUT_TOPIC stops at it.
import { Kafka, type Transaction } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

// Sized for production traffic: at a trickle (this lab's input is smaller) it is never reached.
const COMMIT_EVERY = 1000;

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
// Fence any older instance with our id (and abort its open transaction) before reading offsets.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: env('INPUT_TOPIC'), fromBeginning: true });

// What this process has already put into a transaction, per partition: a rebalance can deliver
// it again, and the open transaction already holds it.
const doneUpTo = new Map<number, bigint>();
// The transaction batches are added to, and how many records it holds.
let open: { txn: Transaction; pending: number } | null = null;

// Records already sent sit in the open transaction: if anything fails, the only safe move is to
// abort it and start afresh from the committed offsets.
const giveUp = async (err: unknown, committing: boolean) => {
  if (!committing && open) await open.txn.abort().catch(() => undefined); // exiting anyway: the restart fences us
  console.error(`transaction failed (${(err as Error).message}): restarting afresh`);
  process.exit(1);
};

await consumer.run({
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
    const messages = batch.messages.filter((m) => BigInt(m.offset) >= (doneUpTo.get(batch.partition) ?? 0n));
    if (messages.length === 0) {
      if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
      return;
    }
    if (open && open.pending >= COMMIT_EVERY) {
      try {
        await open.txn.commit();
      } catch (err) {
        await giveUp(err, true);
      }
      console.log(`committed ${open.pending} records`);
      open = null;
    }
    try {
      open ??= { txn: await producer.transaction(), pending: 0 };
      await open.txn.send({
        topic: env('OUTPUT_TOPIC'),
        messages: messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers })),
      });
      await open.txn.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }] }],
      });
    } catch (err) {
      await giveUp(err, false);
    }
    open!.pending += messages.length;
    doneUpTo.set(batch.partition, BigInt(batch.lastOffset()) + 1n);
    resolveOffset(batch.lastOffset());
    await heartbeat();
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
