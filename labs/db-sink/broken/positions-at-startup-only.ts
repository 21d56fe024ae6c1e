// expect-fail: no-duplicate-effects
// Keeps its positions in the database, in the same transaction as the rows (a sound idea), but
// reads them only once, at start-up. When the group rebalances (a second instance joins), an
// instance that is handed a partition filters its records with the position it read when it
// started, which is older than what the previous owner has written since: those orders are
// written again. The position must be read again for every partition an instance is given.
import { Kafka } from 'kafkajs';
import pg from 'pg';

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
await db.query(`CREATE TABLE IF NOT EXISTS sink_positions (
  topic text NOT NULL, part integer NOT NULL, next_offset bigint NOT NULL, PRIMARY KEY (topic, part))`);
const positions = new Map<string, bigint>();
for (const row of (await db.query('SELECT topic, part, next_offset FROM sink_positions')).rows) {
  positions.set(`${row.topic}/${row.part}`, BigInt(row.next_offset));
}

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
  eachBatch: async ({ batch, resolveOffset }) => {
    const key = `${batch.topic}/${batch.partition}`;
    const from = positions.get(key) ?? 0n;
    const fresh = batch.messages.filter((m) => BigInt(m.offset) >= from);
    if (fresh.length === 0) return;
    const next = BigInt(batch.lastOffset()) + 1n;
    await db.query('BEGIN');
    try {
      for (const m of fresh) {
        const o = JSON.parse(m.value!.toString());
        await db.query('INSERT INTO orders (order_id, customer, sku, quantity, amount_cents) VALUES ($1, $2, $3, $4, $5)', [
          o.orderId,
          o.customer,
          o.sku,
          o.quantity,
          o.quantity * o.unitPriceCents,
        ]);
      }
      await db.query(
        `INSERT INTO sink_positions (topic, part, next_offset) VALUES ($1, $2, $3)
         ON CONFLICT (topic, part) DO UPDATE SET next_offset = EXCLUDED.next_offset`,
        [batch.topic, batch.partition, next.toString()],
      );
      await db.query('COMMIT');
    } catch (err) {
      await db.query('ROLLBACK').catch(() => {});
      throw err;
    }
    positions.set(key, next);
    resolveOffset(batch.lastOffset());
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await db.end().catch(() => {});
  process.exit(0);
});
