// expect-fail: keeps-up
// Offsets travel inside the transaction as they should, but nothing aborts a transaction whose send
// failed: the error goes straight back to kafkajs "so it retries the batch". The retry calls
// producer.transaction() while the failed one is still open, which throws ("There is already an
// ongoing transaction"), kafkajs stops the consumer on that non-retriable error, and the crash
// handler exits only when fenced: the process stays alive, connected and idle with input waiting.
// Like most services it also does other work (here a status line every 5 s; in production a metrics
// or health endpoint), which keeps the process up after its consumer has stopped. (Without it the
// process may exit by itself once its consumer has disconnected, and a supervisor's restart hides
// the wedge: a grade could then pass.)
import { Kafka, type EachBatchPayload } from 'kafkajs';

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

// The next offset to read on each partition, as far as this process has committed. After a
// rebalance (a broker restart causes one) kafkajs reads the group's committed offsets again, and
// the answer can predate our last commit: its offsets become visible when the commit markers
// reach __consumer_offsets, a moment after commit() returned. Skip what we know is done.
const doneUpTo = new Map<number, bigint>();

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  // Skip what this process already committed (see doneUpTo).
  const messages = batch.messages.filter((m) => BigInt(m.offset) >= (doneUpTo.get(batch.partition) ?? 0n));
  if (messages.length === 0) {
    if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
    return;
  }
  // Everything one fetch returned for this partition goes into ONE transaction: one send with all
  // the lines, one sendOffsets, one commit.
  const transaction = await producer.transaction();
  await transaction.send({
    topic: outputTopic,
    messages: messages.map((m) => ({ key: m.key, value: toCsv(JSON.parse(m.value!.toString()) as PageView) })),
  });
  // The next offset to read is last + 1; it is committed only if the transaction is.
  const next = (BigInt(batch.lastOffset()) + 1n).toString();
  await transaction.sendOffsets({
    consumerGroupId: groupId,
    topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }],
  });
  await transaction.commit();
  doneUpTo.set(batch.partition, BigInt(batch.lastOffset()) + 1n);
  resolveOffset(batch.lastOffset());
  console.log(`committed ${messages.length} views from partition ${batch.partition} in one transaction`);
  committedBatches++;
  await heartbeat();
}
let committedBatches = 0;
setInterval(() => console.log(`status: ${committedBatches} batches committed`), 5_000);

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
});

const shutdown = async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
