// expect-fail: no-hanging-transactions
// Batches for speed: one Kafka transaction takes batch after batch, and the batch that
// finds it holding COMMIT_EVERY orders commits it before opening the next. Nothing else ever
// commits: no timer, no flush when the input goes quiet. COMMIT_EVERY is sized for production
// traffic; this lab's input never fills it, so the open transaction, holding the orders sent so
// far, stays open while the idle fan-out waits for more input, and every read_committed reader of
// the three output topics stops at it.
import { Kafka, type EachBatchPayload, type KafkaMessage, type Transaction } from 'kafkajs';

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
const kafka = new Kafka({ clientId: 'order-fan-out', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const ordersTopic = env('ORDERS_TOPIC');
const paymentsTopic = env('PAYMENTS_TOPIC');
const inventoryTopic = env('INVENTORY_TOPIC');
const notificationsTopic = env('NOTIFICATIONS_TOPIC');
const groupId = env('GROUP_ID');

interface Order {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
}

// Each output is a pure function of the order: re-processing an order after a crash produces
// byte-identical records, and the object literals fix the JSON field order.
const toPayment = (o: Order) => JSON.stringify({ orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents });
const toInventory = (o: Order) => JSON.stringify({ orderId: o.orderId, sku: o.sku, quantity: -o.quantity });
const toNotification = (o: Order) =>
  JSON.stringify({ orderId: o.orderId, customer: o.customer, text: `Order ${o.orderId} confirmed: ${o.quantity} x ${o.sku}` });

// Only committed orders: aborted ones must never turn into payments.
const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({
  transactionalId: env('TRANSACTIONAL_ID'),
  idempotent: true,
  maxInFlightRequests: 1,
  retry: { retries: Number.MAX_SAFE_INTEGER },
});

await producer.connect();
// kafkajs sends InitProducerId with our transactional.id on the first transaction(), not on
// connect(). Open and abort an empty one right away, BEFORE the consumer fetches its committed
// offsets: that fences a killed or frozen predecessor and settles its unfinished transaction, so
// the position we resume from already includes (or excludes) its offsets for good.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: ordersTopic, fromBeginning: true });

// What this process has already put into a transaction, per partition: a rebalance can deliver
// it again, and the open transaction already holds it.
const doneUpTo = new Map<number, bigint>();
// Fewer, bigger transactions for speed: batches go into one transaction until it holds
// COMMIT_EVERY orders; the batch that finds it full commits it before opening the next.
// Sized for production traffic: at a trickle (this lab's input is smaller) it is never reached.
const COMMIT_EVERY = 1000;
let open: { transaction: Transaction; pending: number } | null = null;

// Orders already sent sit in the open transaction: if anything fails, the only safe move is to
// abort it and start afresh from the committed offsets.
async function giveUp(err: unknown, committing: boolean): Promise<never> {
  if (!committing && open) await open.transaction.abort().catch(() => undefined); // exiting anyway: the restart fences us
  console.error(`transaction failed (${(err as Error).message}): restarting afresh`);
  process.exit(1);
}

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  const messages = batch.messages.filter((m) => BigInt(m.offset) >= (doneUpTo.get(batch.partition) ?? 0n));
  if (messages.length === 0) {
    if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
    return;
  }
  const orders = messages.map((m: KafkaMessage) => ({ key: m.key, order: JSON.parse(m.value!.toString()) as Order }));

  if (open && open.pending >= COMMIT_EVERY) {
    await open.transaction.commit().catch((err) => giveUp(err, true));
    console.log(`committed ${open.pending} orders`);
    open = null;
  }
  try {
    open ??= { transaction: await producer.transaction(), pending: 0 };
    const { transaction } = open;
    await transaction.send({ topic: paymentsTopic, messages: orders.map(({ key, order }) => ({ key, value: toPayment(order) })) });
    await transaction.send({ topic: inventoryTopic, messages: orders.map(({ key, order }) => ({ key, value: toInventory(order) })) });
    await transaction.send({
      topic: notificationsTopic,
      messages: orders.map(({ key, order }) => ({ key, value: toNotification(order) })),
    });
    const next = (BigInt(batch.lastOffset()) + 1n).toString();
    await transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }],
    });
  } catch (err) {
    await giveUp(err, false);
  }
  open!.pending += orders.length;
  doneUpTo.set(batch.partition, BigInt(batch.lastOffset()) + 1n);
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

await consumer.run({
  autoCommit: false, // offsets travel inside the transaction, never on their own
  eachBatchAutoResolve: false,
  eachBatch: processBatch,
});

// Fenced: another instance now owns our transactional.id. Stop rather than fight it.
const isFenced = (err: unknown) =>
  /fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(`${(err as { type?: string })?.type} ${(err as Error)?.message}`);
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (isFenced(payload.error)) {
    console.error('fenced: a newer instance owns our transactional.id, exiting');
    process.exit(1);
  }
  // kafkajs gave up on an error it will not retry: exit and let the supervisor start us afresh.
  if (!payload.restart) {
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
