// expect-fail: no-duplicate-effects
// Writes each batch in a database transaction and commits the offsets after it, but the INSERT
// has no unique key to conflict on. A crash after the database COMMIT and before the offset
// commit replays the batch, and every order of it gets a second row.
import { Kafka } from 'kafkajs';
import pg from 'pg';

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
const kafka = new Kafka({ clientId: 'order-sink', brokers: process.env.KAFKA_BROKERS!.split(',') });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
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
        await db.query('INSERT INTO orders (order_id, customer, sku, quantity, amount_cents) VALUES ($1, $2, $3, $4, $5)', [
          o.orderId,
          o.customer,
          o.sku,
          o.quantity,
          o.quantity * o.unitPriceCents,
        ]);
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
