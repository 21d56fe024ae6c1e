// expect-fail: no-loss
// Mistake: treats a failed transaction as a "poison batch" to skip: it logs the error, commits the
// consumer offsets past the batch so the partition cannot get stuck, and carries on with a fresh
// producer (kafkajs cannot begin another transaction on one whose commit failed). When the
// coordinator dies, the batch's transaction is aborted, by the coordinator or by the fresh
// producer's fencing, and its orders are never priced.
// Whole program: the solution ends a whole consumer-and-producer "life" after any failed
// transaction and lets a new one re-read the committed offsets; this mistake keeps its one
// consumer going and swaps only the producer, a different structure, not an edit of the solution.
import { Kafka, type EachBatchPayload, type Producer } from 'kafkajs';

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

const PRICES_CENTS: Record<string, number> = { tea: 450, coffee: 320, cake: 275, juice: 390, bagel: 210 };
const price = (line: string) => {
  const [, quantity, , product] = line.split(' ');
  return `${line} = ${((Number(quantity) * PRICES_CENTS[product!]!) / 100).toFixed(2)}`;
};

const newProducer = async (): Promise<Producer> => {
  const p = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
  await p.connect();
  return p;
};

const consumer = kafka.consumer({ groupId, readUncommitted: false });
let producer = await newProducer();
await (await producer.transaction()).abort(); // fence before reading offsets
await consumer.connect();
await consumer.subscribe({ topic: ordersTopic, fromBeginning: true });

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  if (batch.messages.length === 0) return;
  const next = (BigInt(batch.lastOffset()) + 1n).toString();
  try {
    const transaction = await producer.transaction();
    try {
      await transaction.send({
        topic: pricedTopic,
        messages: batch.messages.map((m) => ({ key: m.key, value: price(m.value!.toString()), partition: batch.partition })),
      });
      await transaction.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }] });
      await transaction.commit();
    } catch (err) {
      await transaction.abort().catch(() => {});
      throw err;
    }
  } catch (err) {
    console.error(`skipping batch ${batch.partition}@${batch.firstOffset()}-${batch.lastOffset()}: ${(err as Error).message}`);
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }]);
    await producer.disconnect().catch(() => {});
    producer = await newProducer();
  }
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
