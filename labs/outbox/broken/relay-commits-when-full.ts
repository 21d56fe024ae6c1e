// expect-fail: no-hanging-transactions
// The outbox solution, except that the relay batches for speed: one Kafka transaction takes poll
// after poll, and the poll that finds it holding COMMIT_EVERY events commits it before opening the
// next (only then are its rows marked sent). Nothing else ever commits: no timer, no flush when the
// outbox is empty. COMMIT_EVERY is sized for production traffic; this lab's input never fills it,
// so the open transaction, holding the events sent so far and the relay's position, stays open
// while the idle relay polls an outbox with nothing new, and every read_committed reader of
// EVENTS_TOPIC stops at it.
import { Kafka, type EachBatchPayload, type Transaction } from 'kafkajs';
import pg from 'pg';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const eventsTopic = env('EVENTS_TOPIC');
const groupId = env('GROUP_ID');
// The relay's position lives in Kafka as the committed offset of a consumer group of its own on
// partition 0 of EVENTS_TOPIC (nobody consumes with this group: it is only a transactional
// key-value slot). sendOffsets() is the one thing besides records that kafkajs can put into a
// transaction, so the position commits (or aborts) together with the events. Kafka Connect's
// exactly-once source connectors do the same with their offsets topic.
const relayGroup = `${groupId}-relay`;
const positionSlot = { topic: eventsTopic, partition: 0 };

// Two connections: the order service's transactions must not interleave with the relay's queries.
const connect = async (name: string) => {
  const client = new pg.Client({ connectionString: env('DATABASE_URL') });
  // A lost connection cannot be repaired mid-transaction: exit, the supervisor starts us afresh.
  client.on('error', (err) => {
    console.error(`${name}: database connection lost: ${err.message}`);
    process.exit(1);
  });
  await client.connect();
  return client;
};
const serviceDb = await connect('order service');
const relayDb = await connect('relay');
// The order id is the business key: PostgreSQL refuses a second row for the same order.
await serviceDb.query('CREATE UNIQUE INDEX IF NOT EXISTS orders_order_id_key ON orders (order_id)');
await serviceDb.query('CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (id) WHERE sent_at IS NULL');

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-service', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });

// ---- (ii) the relay --------------------------------------------------------------------------

const producer = kafka.producer({
  transactionalId: env('TRANSACTIONAL_ID'), // stable: a restarted relay fences its predecessor
  idempotent: true,
  maxInFlightRequests: 1,
  retry: { retries: Number.MAX_SAFE_INTEGER },
});
// Connecting runs InitProducerId, which first finishes (or aborts) the previous incarnation's
// transaction, so the position read below is final.
await producer.connect();

async function readPosition(): Promise<bigint> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [offsets] = await admin.fetchOffsets({ groupId: relayGroup, topics: [positionSlot.topic] });
    const slot = offsets?.partitions.find((p) => p.partition === positionSlot.partition);
    const value = BigInt(slot?.offset ?? '-1');
    return value < 0n ? 1n : value; // no position yet: bigserial starts at 1
  } finally {
    await admin.disconnect();
  }
}

interface OutboxRow {
  id: string; // bigint comes back as a string
  aggregate_id: string;
  payload: string;
}

// Fewer, bigger Kafka transactions for speed: polled rows go into one transaction poll after poll
// until it holds COMMIT_EVERY events; the poll that finds it full commits it first, and only then
// are its rows marked sent.
// Sized for production traffic: at a trickle (this lab's input is smaller) it is never reached.
const COMMIT_EVERY = 1000;
let open: { txn: Transaction; pending: number; last: string } | null = null;
// The last outbox id this process has put into a transaction (committed or still open).
let queuedUpTo = 0n;

async function relayOnce(): Promise<boolean> {
  const { rows } = await relayDb.query<OutboxRow>(
    'SELECT id, aggregate_id, payload FROM outbox WHERE sent_at IS NULL AND id > $1 ORDER BY id LIMIT 200',
    [queuedUpTo.toString()],
  );
  if (rows.length === 0) return false;
  if (open && open.pending >= COMMIT_EVERY) {
    const full = open;
    await full.txn.commit(); // a failure ends the process: the restart fences us and reads the position
    open = null;
    // A crash here is harmless: the position already says these rows are published.
    await relayDb.query('UPDATE outbox SET sent_at = now() WHERE id <= $1 AND sent_at IS NULL', [full.last]);
    console.log(`relay: published outbox rows up to id ${full.last} (${full.pending} events)`);
  }
  const last = rows[rows.length - 1]!.id;
  open ??= { txn: await producer.transaction(), pending: 0, last };
  try {
    await open.txn.send({
      topic: eventsTopic,
      messages: rows.map((row) => ({ key: row.aggregate_id, value: row.payload, headers: { 'outbox-id': row.id } })),
    });
    await open.txn.sendOffsets({
      consumerGroupId: relayGroup,
      topics: [{ topic: positionSlot.topic, partitions: [{ partition: positionSlot.partition, offset: (BigInt(last) + 1n).toString() }] }],
    });
  } catch (err) {
    // Earlier polls' events are in this transaction too: abort it all, and the restart starts afresh.
    await open.txn.abort().catch(() => {});
    throw err;
  }
  open.pending += rows.length;
  open.last = last;
  queuedUpTo = BigInt(last);
  return true;
}

async function runRelay(): Promise<void> {
  // Rows below the committed position were published by an earlier run that died before marking
  // them. This program has a single writer whose transactions commit in id order, so no row below
  // the position can still be on its way (with several writers, see the lesson's caveat).
  const position = await readPosition();
  const repaired = await relayDb.query('UPDATE outbox SET sent_at = now() WHERE id < $1 AND sent_at IS NULL', [position.toString()]);
  if (repaired.rowCount) console.log(`relay: ${repaired.rowCount} rows below position ${position} were already published; marked sent`);
  while (!stopping) {
    if (!(await relayOnce())) await sleep(50);
  }
}
let stopping = false;

// ---- (i) the order service --------------------------------------------------------------------

interface PlaceOrder {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
  placedAt: string;
}

const consumer = kafka.consumer({ groupId, readUncommitted: false });
await consumer.connect();
await consumer.subscribe({ topic: env('COMMANDS_TOPIC'), fromBeginning: true });

async function handleBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  if (batch.messages.length === 0) return;
  await serviceDb.query('BEGIN');
  try {
    for (const message of batch.messages) {
      const c = JSON.parse(message.value!.toString()) as PlaceOrder;
      const amountCents = c.quantity * c.unitPriceCents;
      const inserted = await serviceDb.query(
        `INSERT INTO orders (order_id, customer, sku, quantity, amount_cents, placed_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (order_id) DO NOTHING`,
        [c.orderId, c.customer, c.sku, c.quantity, amountCents, c.placedAt],
      );
      // A redelivered command: its order (and so its event) is already there, committed together.
      if (inserted.rowCount === 0) continue;
      const event = { type: 'OrderPlaced', orderId: c.orderId, customer: c.customer, amountCents, placedAt: c.placedAt };
      await serviceDb.query(
        'INSERT INTO outbox (aggregate_id, event_type, payload, occurred_at) VALUES ($1, $2, $3, $4)',
        [c.customer, event.type, JSON.stringify(event), c.placedAt],
      );
    }
    await serviceDb.query('COMMIT');
  } catch (err) {
    await serviceDb.query('ROLLBACK').catch(() => {});
    throw err; // kafkajs delivers the batch again
  }
  const next = (BigInt(batch.lastOffset()) + 1n).toString();
  await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }]);
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart) {
    console.error(`consumer stopped: ${payload.error.message}`);
    process.exit(1);
  }
});
await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: handleBatch });

// The relay runs beside the consumer; any error (a broker restart, a fenced producer) ends the
// process, and the restarted program resumes from the committed position.
const relay = runRelay().catch((err) => {
  console.error(`relay stopped: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});

const shutdown = async () => {
  // Let the relay finish the batch it is publishing: a transaction left open blocks read_committed
  // consumers of EVENTS_TOPIC until it times out.
  stopping = true;
  await relay;
  await consumer.disconnect().catch(() => {});
  await producer.disconnect().catch(() => {});
  await serviceDb.end().catch(() => {});
  await relayDb.end().catch(() => {});
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
