// expect-fail: no-duplicates
// Bigger transactions by batching ACROSS partitions: batches from several partitions go into one
// open transaction, committed once it holds 100 records or has lingered 300 ms. But the offsets
// sent with it are those of the last batch only, so the other partitions in the transaction do
// not get theirs: the group falls behind there, and after a crash the restarted instance reads
// those records again and writes them a second time. (Often the group's final offsets are wrong
// too, but a later transaction that ends in that partition can still repair them.)
import { Kafka, type Transaction } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'page-views', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const groupId = process.env.GROUP_ID!;
const consumer = kafka.consumer({ groupId });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
const toCsv = (v: { id: string; user: string; page: string; ms: number }) => `${v.id},${v.user},${v.page},${v.ms}`;

let txn: Transaction | null = null;
let records = 0;
let last: { topic: string; partition: number; offset: string } | null = null;
let linger: NodeJS.Timeout | null = null;

// Sends and commits run one after another, whether a batch or the linger timer starts them.
let queue: Promise<void> = Promise.resolve();
const serially = (step: () => Promise<void>) => {
  queue = queue.then(step).catch((err) => {
    console.error(`giving up: ${(err as Error).message}`);
    process.exit(1); // the supervisor restarts us; the open transaction is aborted by the next one
  });
  return queue;
};

async function commitOpenTransaction() {
  if (!txn || !last) return;
  await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: last.topic, partitions: [{ partition: last.partition, offset: last.offset }] }] });
  await txn.commit();
  console.log(`committed ${records} records in one transaction`);
  txn = null;
  records = 0;
}

await producer.connect();
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: process.env.INPUT_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch }) => {
    if (batch.messages.length === 0) return;
    await serially(async () => {
      txn ??= await producer.transaction();
      await txn.send({
        topic: process.env.OUTPUT_TOPIC!,
        messages: batch.messages.map((m) => ({ key: m.key, value: toCsv(JSON.parse(m.value!.toString())) })),
      });
      records += batch.messages.length;
      last = { topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() };
      if (records >= 100) await commitOpenTransaction();
    });
    if (linger) clearTimeout(linger);
    linger = setTimeout(() => void serially(commitOpenTransaction), 300);
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
