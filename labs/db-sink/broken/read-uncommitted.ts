// expect-fail: no-aborted-reads
// Idempotent writes and the right order of commits, but the consumer reads uncommitted input:
// orders from the producer's aborted transactions get rows as if they had happened.
import { Kafka } from 'kafkajs';
import pg from 'pg';

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
await db.query('CREATE UNIQUE INDEX IF NOT EXISTS orders_order_id_key ON orders (order_id)');
const kafka = new Kafka({ clientId: 'order-sink', brokers: process.env.KAFKA_BROKERS!.split(',') });
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
