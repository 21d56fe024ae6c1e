// expect-fail: saga-outcome
// Retries what is worth retrying, but takes every other answer as the step's success: a 402 from the
// card service ends the saga as if the card had been charged. The order is reported completed, no
// money was taken, and the stock stays reserved for good: a saga that neither completed nor was
// compensated.
import { Kafka, type EachBatchPayload } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-saga', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const ordersTopic = env('ORDERS_TOPIC');
const eventsTopic = env('EVENTS_TOPIC');
const apiUrl = env('API_URL');
const groupId = env('GROUP_ID');

interface Order {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
  card: string;
}

const ATTEMPT_TIMEOUT_MS = 1_500;
const MAX_ATTEMPTS = 6;

class PermanentError extends Error {}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * POSTs one saga step with a key that names it (`<step>:<orderId>`): the same on every attempt and
 * after every restart. Returns the status and body of the answer: 2xx, or 402 for the charge.
 */
async function step(path: string, key: string, body: object, heartbeat: () => Promise<void>): Promise<{ status: number; text: string }> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    try {
      const res = await fetch(`${apiUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      const text = await res.text();
      // A success, or the card service's decision: both are answers the saga acts on.
      if (res.status < 500 && res.status !== 409 && res.status !== 429) return { status: 201, text }; // answered: done
      // 5xx: outcome unknown; 409: our first attempt is still in progress; 429: later. Retry
      // with the same key. Any other 4xx will not get better.
      if (res.status < 500 && res.status !== 409 && res.status !== 429) throw new PermanentError(`POST ${path} (${key}) -> ${res.status}: ${text}`);
      lastError = new Error(`POST ${path} (${key}) -> ${res.status}`);
    } catch (err) {
      if (err instanceof PermanentError) throw err;
      lastError = err; // timed out or connection lost: maybe applied, maybe not; the key decides
    }
    if (attempt < MAX_ATTEMPTS) {
      const cap = Math.min(2_000, 100 * 2 ** attempt); // exponential backoff with jitter
      await sleep(cap / 2 + Math.random() * (cap / 2));
      await heartbeat();
    }
  }
  // Out of attempts: throw, so the batch is not committed and every saga of it runs again later
  // with the same keys. Never end a saga whose step is unknown.
  throw lastError;
}

/** Runs one order's saga to its end and returns the event that says which end. */
async function runSaga(order: Order, heartbeat: () => Promise<void>): Promise<string> {
  const stock = { orderId: order.orderId, sku: order.sku, quantity: order.quantity };
  const amountCents = order.quantity * order.unitPriceCents;
  await step('/inventory/reservations', `reserve:${order.orderId}`, stock, heartbeat);
  const charge = await step('/charges', `charge:${order.orderId}`, { orderId: order.orderId, amountCents, card: order.card }, heartbeat);
  if (charge.status === 402) {
    // Compensate the one step that succeeded. A release retried or replayed changes nothing.
    await step('/inventory/releases', `release:${order.orderId}`, stock, heartbeat);
    return JSON.stringify({ type: 'OrderCancelled', orderId: order.orderId, reason: 'card_declined' });
  }
  return JSON.stringify({ type: 'OrderCompleted', orderId: order.orderId, amountCents });
}

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
// Register our transactional.id now: this fences a dead predecessor and aborts its open
// transaction before we read the committed offsets.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: ordersTopic, fromBeginning: true });

// The next offset to read on each partition, as far as this process has committed (a rebalance
// can hand back committed offsets older than our last commit for a moment).
const doneUpTo = new Map<number, bigint>();

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  const messages = batch.messages.filter((m) => BigInt(m.offset) >= (doneUpTo.get(batch.partition) ?? 0n));
  if (messages.length === 0) {
    if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
    return;
  }
  // 1. Every saga of the batch to its end, before the transaction opens.
  const events: { key: string; value: string }[] = [];
  for (const message of messages) {
    const order = JSON.parse(message.value!.toString()) as Order;
    events.push({ key: order.orderId, value: await runSaga(order, heartbeat) });
    await heartbeat();
  }
  // 2. The events and the offsets in one transaction: the sagas end together or not at all.
  const txn = await producer.transaction();
  let committing = false;
  try {
    await txn.send({ topic: eventsTopic, messages: events });
    await txn.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    committing = true;
    await txn.commit();
  } catch (err) {
    // A failed commit may have committed all the same, and kafkajs can abort neither then nor
    // after a failed abort: exit, and the fresh start fences our id and reads the offsets.
    if (committing || !(await txn.abort().then(() => true, () => false))) {
      console.error(`transaction outcome unknown (${(err as Error).message}): restarting afresh`);
      process.exit(1);
    }
    throw err; // kafkajs delivers the batch again: the same keys make the repeat harmless
  }
  doneUpTo.set(batch.partition, BigInt(batch.lastOffset()) + 1n);
  resolveOffset(batch.lastOffset());
  console.log(`ended ${events.length} sagas from partition ${batch.partition} up to offset ${batch.lastOffset()}`);
}

await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

const isFenced = (err: unknown) => /fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(`${(err as { type?: string })?.type} ${(err as Error)?.message}`);
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (isFenced(payload.error) || !payload.restart) {
    console.error(`consumer stopped: ${payload.error.message}`);
    process.exit(1);
  }
});

const shutdown = async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
