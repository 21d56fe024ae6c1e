// Fan-out pipeline, at-least-once version: each order goes to three topics with three plain sends.
// It works until something crashes between them. Make it exactly-once and atomic: look for the
// TODOs in the section "pipeline" below (the lesson "Fan-out pipelines" shows what can take the
// place of both sections).
import { Kafka } from 'kafkajs';

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`missing environment variable ${name}`);
  return value;
}

const ORDERS_TOPIC = env('ORDERS_TOPIC');
const PAYMENTS_TOPIC = env('PAYMENTS_TOPIC');
const INVENTORY_TOPIC = env('INVENTORY_TOPIC');
const NOTIFICATIONS_TOPIC = env('NOTIFICATIONS_TOPIC');
const GROUP_ID = env('GROUP_ID');

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-fan-out', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });

// ---- outputs: what one order turns into ---------------------------------------------------------
interface Order {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
}

// The three derived values. Their exact shape matters: compact JSON, fields in this order.
const toPayment = (o: Order) => JSON.stringify({ orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents });
const toInventory = (o: Order) => JSON.stringify({ orderId: o.orderId, sku: o.sku, quantity: -o.quantity });
const toNotification = (o: Order) =>
  JSON.stringify({ orderId: o.orderId, customer: o.customer, text: `Order ${o.orderId} confirmed: ${o.quantity} x ${o.sku}` });

// ---- pipeline: consume, fan out, produce ----------------------------------------------------------
const consumer = kafka.consumer({ groupId: GROUP_ID });
// TODO: a transactional producer: the lab's TRANSACTIONAL_ID, idempotent, maxInFlightRequests: 1,
// and its own retry count.
const producer = kafka.producer();

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: ORDERS_TOPIC, fromBeginning: true });

await consumer.run({
  // TODO: the consumer must not commit offsets on its own; they belong in the transaction.
  autoCommit: true,
  eachMessage: async ({ message }) => {
    const order = JSON.parse(message.value!.toString()) as Order;
    // TODO: open ONE transaction for all three sends (better: one per batch, with eachBatch),
    // add the consumed offset + 1 with sendOffsets, then commit; abort and rethrow on errors.
    await producer.send({ topic: PAYMENTS_TOPIC, messages: [{ key: message.key, value: toPayment(order) }] });
    await producer.send({ topic: INVENTORY_TOPIC, messages: [{ key: message.key, value: toInventory(order) }] });
    await producer.send({ topic: NOTIFICATIONS_TOPIC, messages: [{ key: message.key, value: toNotification(order) }] });
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
