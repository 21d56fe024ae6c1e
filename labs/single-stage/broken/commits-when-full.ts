// expect-fail: no-hanging-transactions
// Batches across fetches: one transaction stays open and collects batches until COMMIT_EVERY records
// are in it, and it is committed when the next batch arrives and finds it full (flush before add).
// Nothing commits a transaction that is not full yet: no timer, no flush when the input goes idle.
// So the last records of the run sit in an open transaction while the program waits for more, and
// a read_committed reader is held back behind them for as long as the process lives.
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
const kafka = new Kafka({ clientId: 'upper-case', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const inputTopic = env('INPUT_TOPIC');
const outputTopic = env('OUTPUT_TOPIC');
const groupId = env('GROUP_ID');

// readUncommitted: false is kafkajs's default; spelled out because it is the point.
const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({
  transactionalId: env('TRANSACTIONAL_ID'),
  idempotent: true,
  maxInFlightRequests: 1,
  retry: { retries: Number.MAX_SAFE_INTEGER },
});

await producer.connect();
// kafkajs registers the transactional.id (InitProducerId) at the first transaction, not at connect.
// Do it now, before the consumer reads its committed offsets: this fences any older instance with
// our id and aborts its open transaction, so the offsets we resume from are final.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });

// The next offset to read on each partition, as far as this process has committed, or has already
// written into the open transaction: a batch kafkajs delivers again (after a rebalance) is skipped.
const doneUpTo = new Map<number, bigint>();
const COMMIT_EVERY = 20;
let open: { transaction: Transaction; records: number; upTo: Map<number, bigint> } | null = null;
const seenUpTo = (partition: number) => open?.upTo.get(partition) ?? doneUpTo.get(partition) ?? 0n;

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  const messages = batch.messages.filter((m) => BigInt(m.offset) >= seenUpTo(batch.partition));
  if (messages.length === 0) {
    if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
    return;
  }
  try {
    // The open transaction is full: commit it before adding more.
    if (open && open.records >= COMMIT_EVERY) {
      await open.transaction.commit();
      for (const [partition, next] of open.upTo) doneUpTo.set(partition, next);
      console.log(`committed ${open.records} records in one transaction`);
      open = null;
    }
    if (!open) open = { transaction: await producer.transaction(), records: 0, upTo: new Map() };
    await open.transaction.send({
      topic: outputTopic,
      messages: messages.map((m) => ({ key: m.key, value: m.value?.toString().toUpperCase() ?? null })),
    });
    const next = BigInt(batch.lastOffset()) + 1n;
    await open.transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next.toString() }] }],
    });
    open.records += messages.length;
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
  autoCommit: false,
  eachBatchAutoResolve: false,
  eachBatch: processBatch,
});

// A fenced producer must stop: another instance with our transactional.id has taken over.
// kafkajs wraps the broker's INVALID_PRODUCER_EPOCH / PRODUCER_FENCED in a non-retriable error.
const isFenced = (err: unknown) => /fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(`${(err as { type?: string })?.type} ${(err as Error)?.message}`);
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (isFenced(payload.error)) {
    console.error('fenced: a newer instance owns our transactional.id, exiting');
    process.exit(1);
  }
  // kafkajs gives up on errors it cannot retry; exit so the supervisor starts us afresh.
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
