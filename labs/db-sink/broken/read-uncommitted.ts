// expect-fail: no-aborted-reads
// Idempotent writes and the right order of commits, but the consumer reads uncommitted input:
// orders from the producer's aborted transactions get rows as if they had happened.
import { Kafka } from 'kafkajs';
import pg from 'pg';

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
await db.query('CREATE UNIQUE INDEX IF NOT EXISTS orders_order_id_key ON orders (order_id)');
// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-sink', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID!, readUncommitted: true });
await consumer.connect();
await consumer.subscribe({ topic: process.env.ORDERS_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch }) => {
    if (batch.messages.length === 0) return;
    await db.query('BEGIN');
    try {
      for (const m of batch.messages) {
        const o = JSON.parse(m.value!.toString());
        await db.query(
          'INSERT INTO orders (order_id, customer, sku, quantity, amount_cents) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (order_id) DO NOTHING',
          [o.orderId, o.customer, o.sku, o.quantity, o.quantity * o.unitPriceCents],
        );
      }
      await db.query('COMMIT');
    } catch (err) {
      await db.query('ROLLBACK').catch(() => {});
      throw err;
    }
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }]);
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await db.end();
  process.exit(0);
});
