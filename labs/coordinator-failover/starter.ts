// Order pricing with transactions: read-process-write with the offsets inside the transaction,
// fencing before reading offsets. It survives a crash of this program. On the lab's 3-broker
// cluster the grader also SIGKILLs the broker that is your transaction coordinator, mid-transaction.
// Grade it once as it is, read what happened, then work through the TODOs.
import { Kafka, type EachBatchPayload } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 4 here on purpose: with this lab's short backoff (see
// its environment panel) a commit caught by the coordinator's death fails after about 1.2 s
// instead of outlasting the failover, so the recovery path runs. In production give the client 10
// (about two minutes with kafkajs's default backoff, 300 ms doubling to at most 30 s apart). An
// idempotent or transactional producer sets its own `retry: { retries: Number.MAX_SAFE_INTEGER }`:
// a send it gave up on may have been written, and its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-pricer', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 4 } });
const ordersTopic = env('ORDERS_TOPIC');
const pricedTopic = env('PRICED_TOPIC');
const groupId = env('GROUP_ID');

// Unit prices in cents. "o00017 3 x tea" -> "o00017 3 x tea = 13.50"
const PRICES_CENTS: Record<string, number> = { tea: 450, coffee: 320, cake: 275, juice: 390, bagel: 210 };
function price(line: string): string {
  const [, quantity, , product] = line.split(' ');
  return `${line} = ${((Number(quantity) * PRICES_CENTS[product!]!) / 100).toFixed(2)}`;
}

// TODO 1: kafkajs restarts a crashed consumer on its own, and the restarted consumer reads the
// committed offsets straight away, without fencing first. Decide who restarts what (see retry.restartOnFailure).
const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
// Fence first (kafkajs sends InitProducerId on the first transaction()), then read the offsets.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: ordersTopic, fromBeginning: true });

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  if (batch.messages.length === 0) return;
  const transaction = await producer.transaction();
  try {
    await transaction.send({
      topic: pricedTopic,
      messages: batch.messages.map((m) => ({ key: m.key, value: price(m.value!.toString()) })),
    });
    await transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    await transaction.commit();
  } catch (err) {
    // TODO 2: when commit() fails, did the transaction commit? Can this producer still abort it,
    // or begin the next one? (Log the error and the retry that follows, then grade again.)
    // TODO 3: whatever you do here, never resolve this batch: its outcome is unknown.
    await transaction.abort().catch(() => {});
    throw err;
  }
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

// TODO 4: after a failure, start again the safe way: a new producer that fences, THEN a consumer
// that reads the committed offsets. A process that exits is restarted by the lab's supervisor too.
consumer.on(consumer.events.CRASH, ({ payload }) => console.error(`consumer crashed (restart: ${payload.restart}): ${payload.error.message}`));

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
