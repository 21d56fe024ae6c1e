// Database sink, at-least-once version: it writes each order, then commits its offset. It works
// until something crashes between the two. Your job: make the write safe to repeat.
import { Kafka } from 'kafkajs';
import pg from 'pg';

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
// TODO: give PostgreSQL a way to recognise an order it already has: a unique index on order_id
//       (CREATE UNIQUE INDEX IF NOT EXISTS ... ON orders (order_id)).

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-sink', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
await consumer.connect();
await consumer.subscribe({ topic: process.env.ORDERS_TOPIC!, fromBeginning: true });

await consumer.run({
  autoCommit: false,
  eachMessage: async ({ topic, partition, message }) => {
    const order = JSON.parse(message.value!.toString());

    // 1. The effect. PostgreSQL commits it as soon as the statement returns.
    // TODO: a crash after this line and before the offset commit replays the order: make the
    //       replay harmless with INSERT ... ON CONFLICT (order_id) DO NOTHING.
    await db.query(
      'INSERT INTO orders (order_id, customer, sku, quantity, amount_cents) VALUES ($1, $2, $3, $4, $5)',
      [order.orderId, order.customer, order.sku, order.quantity, order.quantity * order.unitPriceCents],
    );

    // 2. The progress marker: the offset of the NEXT record to read. Keep it after the effect.
    await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await db.end();
  process.exit(0);
});
