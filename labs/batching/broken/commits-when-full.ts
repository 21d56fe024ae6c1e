// expect-fail: no-hanging-transactions
// Batches more than one fetch per transaction: one transaction stays open and collects batches until
// COMMIT_EVERY views are in it, and it is committed when the next batch arrives and finds it full
// (flush before add). Nothing commits a transaction that is not full yet: no timer, no flush when
// the input goes idle. So the last views of the run sit in an open transaction while the program
// waits for more, and every read_committed reader is held back behind them.
import { Kafka, type EachBatchPayload, type Transaction } from 'kafkajs';

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
const inputTopic = env('INPUT_TOPIC');
const outputTopic = env('OUTPUT_TOPIC');
const groupId = env('GROUP_ID');

interface PageView {
  id: string;
  user: string;
  page: string;
  ms: number;
}
// A pure function of the input: re-processing a view after a crash produces the same line.
const toCsv = (v: PageView) => `${v.id},${v.user},${v.page},${v.ms}`;

// Committed input only: views of aborted transactions never happened.
const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({
  transactionalId: env('TRANSACTIONAL_ID'),
  idempotent: true,
  maxInFlightRequests: 1,
  retry: { retries: Number.MAX_SAFE_INTEGER },
});

await producer.connect();
// kafkajs registers the transactional.id (InitProducerId) at the first transaction, not at
// connect(). Doing it now, before the consumer reads its committed offsets, fences an older
// instance with our id and settles its open transaction, so the offsets we resume from are final.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });

// The next offset to read on each partition, as far as this process has committed, or has already
// written into the open transaction: a batch kafkajs delivers again (after a rebalance) is skipped.
const doneUpTo = new Map<number, bigint>();
const COMMIT_EVERY = 50;
let open: { transaction: Transaction; views: number; upTo: Map<number, bigint> } | null = null;
const seenUpTo = (partition: number) => open?.upTo.get(partition) ?? doneUpTo.get(partition) ?? 0n;

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  const messages = batch.messages.filter((m) => BigInt(m.offset) >= seenUpTo(batch.partition));
  if (messages.length === 0) {
    if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
    return;
  }
  try {
    // The open transaction is full: commit it before adding more.
    if (open && open.views >= COMMIT_EVERY) {
      await open.transaction.commit();
      for (const [partition, next] of open.upTo) doneUpTo.set(partition, next);
      console.log(`committed ${open.views} views in one transaction`);
      open = null;
    }
    if (!open) open = { transaction: await producer.transaction(), views: 0, upTo: new Map() };
    await open.transaction.send({
      topic: outputTopic,
      messages: messages.map((m) => ({ key: m.key, value: toCsv(JSON.parse(m.value!.toString()) as PageView) })),
    });
    const next = BigInt(batch.lastOffset()) + 1n;
    await open.transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next.toString() }] }],
    });
    open.views += messages.length;
    open.upTo.set(batch.partition, next);
  } catch (err) {
    // Whatever state the transaction is in, a fresh start fences our transactional id, which
    // aborts it, and resumes from the committed offsets.
    console.error(`transaction failed (${(err as Error).message}): restarting afresh`);
    process.exit(1);
  }
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

await consumer.run({
  autoCommit: false, // offsets travel inside the transaction, never on their own
  eachBatchAutoResolve: false,
  eachBatch: processBatch,
});

// Fenced: a newer instance owns our transactional.id. Stop rather than fight it.
const isFenced = (err: unknown) =>
  /fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(`${(err as { type?: string })?.type} ${(err as Error)?.message}`);
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (isFenced(payload.error)) {
    console.error('fenced: a newer instance owns our transactional.id, exiting');
    process.exit(1);
  }
  // kafkajs gave up on an error it will not retry: exit and let the supervisor start us afresh.
  if (!payload.restart) {
    console.error(`consumer stopped: ${payload.error.message}`);
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
