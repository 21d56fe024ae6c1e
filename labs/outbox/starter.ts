// Transactional outbox, starter. The order service below writes each order row and commits the
// command's offset; nothing reaches EVENTS_TOPIC yet. Your job:
//  (i)  write the order row AND an outbox row for its OrderPlaced event in ONE database
//       transaction, so that a redelivered command adds neither a second order nor a second event;
//  (ii) add a relay that publishes the unsent outbox rows in id order to EVENTS_TOPIC in a Kafka
//       transaction and then marks them sent, without publishing anything twice when it is killed
//       between the Kafka commit and the UPDATE.
import { Kafka } from 'kafkajs';
import pg from 'pg';

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
// TODO: a unique index on orders (order_id), so PostgreSQL recognises an order it already has.

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-service', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
await consumer.connect();
await consumer.subscribe({ topic: process.env.COMMANDS_TOPIC!, fromBeginning: true });

await consumer.run({
  autoCommit: false,
  eachMessage: async ({ topic, partition, message }) => {
    const c = JSON.parse(message.value!.toString());
    const amountCents = c.quantity * c.unitPriceCents;

    // TODO: BEGIN a transaction; INSERT ... ON CONFLICT (order_id) DO NOTHING; only when a row was
    //       inserted, also INSERT INTO outbox (aggregate_id, event_type, payload, occurred_at) the event
    //       {"type":"OrderPlaced","orderId","customer","amountCents","placedAt"} (JSON.stringify, this
    //       field order), keyed by the customer; then COMMIT.
    await db.query(
      'INSERT INTO orders (order_id, customer, sku, quantity, amount_cents, placed_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [c.orderId, c.customer, c.sku, c.quantity, amountCents, c.placedAt],
    );

    // The command is handled: the offset of the NEXT record to read. Keep it after the COMMIT.
    await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
  },
});

// TODO: the relay, beside the consumer (use a second pg.Client: it must not run its queries inside
// the order service's transaction). In a loop:
//   1. SELECT id, aggregate_id, payload FROM outbox WHERE sent_at IS NULL ORDER BY id LIMIT 100
//   2. in ONE Kafka transaction (producer with transactionalId: process.env.TRANSACTIONAL_ID):
//      send them to EVENTS_TOPIC (key = aggregate_id, value = payload, header "outbox-id"), and
//      make the transaction ALSO record how far the relay got (hint: txn.sendOffsets can commit an
//      offset for a consumer group of your own), then commit
//   3. UPDATE outbox SET sent_at = now() for those rows
// A kill between 2 and 3 leaves the rows unsent: on start-up, read the position back and mark the
// rows below it sent instead of publishing them again.

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await db.end();
  process.exit(0);
});
