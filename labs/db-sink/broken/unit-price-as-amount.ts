// expect-fail: effects-correct
// Exactly once (ON CONFLICT DO NOTHING, offsets after the database commit), but amount_cents
// stores the unit price instead of quantity × unit price: a row for three anvils charges for one.
// Every order of more than one item has the wrong amount.
import { Kafka, type EachBatchPayload } from 'kafkajs';
import pg from 'pg';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const db = new pg.Client({ connectionString: env('DATABASE_URL') });
// A lost connection cannot be repaired mid-batch: exit, and the supervisor starts us afresh.
db.on('error', (err) => {
  console.error(`database connection lost: ${err.message}`);
  process.exit(1);
});
await db.connect();
// The order id is the business key: with a unique index PostgreSQL itself refuses a second row
// for the same order, whichever run (or zombie) tries to write it.
await db.query('CREATE UNIQUE INDEX IF NOT EXISTS orders_order_id_key ON orders (order_id)');

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-sink', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const groupId = env('GROUP_ID');
// readUncommitted: false is kafkajs's default; spelled out because aborted orders must not count.
const consumer = kafka.consumer({ groupId, readUncommitted: false });
await consumer.connect();
await consumer.subscribe({ topic: env('ORDERS_TOPIC'), fromBeginning: true });

interface Order {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
}

async function writeBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  if (batch.messages.length === 0) return;
  // 1. The effect: the batch's orders in one database transaction. ON CONFLICT DO NOTHING turns
  //    a replayed order into a no-op, so a crash anywhere below only costs a harmless replay.
  await db.query('BEGIN');
  try {
    for (const message of batch.messages) {
      const order = JSON.parse(message.value!.toString()) as Order;
      await db.query(
        `INSERT INTO orders (order_id, customer, sku, quantity, amount_cents)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (order_id) DO NOTHING`,
        [order.orderId, order.customer, order.sku, order.quantity, order.unitPriceCents],
      );
    }
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK').catch(() => {});
    throw err; // kafkajs delivers the batch again
  }
  // 2. The progress marker, only once the rows are durable: the next offset to read (last + 1).
  const next = (BigInt(batch.lastOffset()) + 1n).toString();
  await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }]);
  resolveOffset(batch.lastOffset());
  await heartbeat();
  console.log(`wrote ${batch.messages.length} orders from partition ${batch.partition} up to offset ${batch.lastOffset()}`);
}

await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: writeBatch });

consumer.on(consumer.events.CRASH, ({ payload }) => {
  // kafkajs gives up on errors it cannot retry; exit so the supervisor starts us afresh.
  if (!payload.restart) {
    console.error(`consumer stopped: ${payload.error.message}`);
    process.exit(1);
  }
});

const shutdown = async () => {
  await consumer.disconnect();
  await db.end().catch(() => {});
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
