// expect-fail: no-loss
// A fresh transactional.id on every start (TRANSACTIONAL_ID plus a random suffix, "ids must be
// unique"), with a short transactionTimeout so that a crashed instance's unfinished transaction
// does not hold back read_committed readers for long. Crashes look handled: the coordinator aborts
// the dead instance's transaction within 15 s and its successor redoes the batch. Zombies are not:
// no later instance shares the id, so nothing fences a frozen one, and kafkajs's sendOffsets
// carries no group generation. It wakes and commits the batch its replacement already redid.
// On a cluster that grants ids by prefix that is the bug. This lab's attempt is granted exactly
// the ids the lab gives it (LITERAL ACLs, nothing by prefix), so the broker refuses this one
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): no transaction ever starts and nothing reaches the output.
import { randomUUID } from 'node:crypto';
import { Kafka, type EachBatchPayload, type KafkaMessage } from 'kafkajs';

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
  transactionalId: `${env('TRANSACTIONAL_ID')}-${randomUUID()}`,
  transactionTimeout: 15_000,
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

// The next offset to read on each partition, as far as this process has committed. After a
// rebalance (a broker restart causes one) kafkajs reads the group's committed offsets again, and
// the answer can predate our last commit: its offsets become visible when the commit markers
// reach __consumer_offsets, a moment after commit() returned. Skip what we know is done.
const doneUpTo = new Map<number, bigint>();

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  // Skip what this process already committed (see doneUpTo).
  const messages = batch.messages.filter((m) => BigInt(m.offset) >= (doneUpTo.get(batch.partition) ?? 0n));
  if (messages.length === 0) {
    if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
    return;
  }
  const orders = messages.map((m: KafkaMessage) => ({ key: m.key, order: JSON.parse(m.value!.toString()) as Order }));

  const transaction = await producer.transaction();
  let committing = false;
  try {
    // Three topics, one transaction: a crash between these sends leaves an open transaction that
    // the restarted instance aborts, so no reader ever sees a payment without its stock movement.
    await transaction.send({ topic: paymentsTopic, messages: orders.map(({ key, order }) => ({ key, value: toPayment(order) })) });
    await transaction.send({ topic: inventoryTopic, messages: orders.map(({ key, order }) => ({ key, value: toInventory(order) })) });
    await transaction.send({
      topic: notificationsTopic,
      messages: orders.map(({ key, order }) => ({ key, value: toNotification(order) })),
    });
    // The input position moves in the same transaction: the next offset to read is last + 1.
    const next = (BigInt(batch.lastOffset()) + 1n).toString();
    await transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }],
    });
    committing = true;
    await transaction.commit();
  } catch (err) {
    // A failed commit() may have committed all the same (the coordinator decided before the reply
    // was lost, in a broker restart say), and kafkajs can abort neither then nor after a failed
    // abort. Redoing the batch from memory could write it twice: exit, and the fresh start fences
    // our transactional id, which settles that transaction, then reads the committed offsets.
    if (committing || !(await transaction.abort().then(() => true, () => false))) {
      console.error(`transaction outcome unknown (${(err as Error).message}): restarting afresh`);
      process.exit(1);
    }
    // Aborted for sure: rethrow, and kafkajs delivers the batch again from the last resolved offset.
    throw err;
  }
  doneUpTo.set(batch.partition, BigInt(batch.lastOffset()) + 1n);
  resolveOffset(batch.lastOffset());
  console.log(`fanned out ${orders.length} orders from partition ${batch.partition} up to offset ${batch.lastOffset()}`);
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
