// Fan-out pipeline, at-least-once version: each order goes to three topics with three plain sends.
// It works until something crashes between them. Make it exactly-once and atomic: look for the TODOs.
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'order-fan-out', brokers: process.env.KAFKA_BROKERS!.split(',') });
const ordersTopic = process.env.ORDERS_TOPIC!;

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

const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
// TODO: a transactional producer: the lab's TRANSACTIONAL_ID, idempotent, maxInFlightRequests: 1.
const producer = kafka.producer();

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: ordersTopic, fromBeginning: true });

await consumer.run({
  // TODO: the consumer must not commit offsets on its own; they belong in the transaction.
  autoCommit: true,
  eachMessage: async ({ message }) => {
    const order = JSON.parse(message.value!.toString()) as Order;
    // TODO: open ONE transaction for all three sends (better: one per batch, with eachBatch),
    // add the consumed offset + 1 with sendOffsets, then commit; abort and rethrow on errors.
    await producer.send({ topic: process.env.PAYMENTS_TOPIC!, messages: [{ key: message.key, value: toPayment(order) }] });
    await producer.send({ topic: process.env.INVENTORY_TOPIC!, messages: [{ key: message.key, value: toInventory(order) }] });
    await producer.send({ topic: process.env.NOTIFICATIONS_TOPIC!, messages: [{ key: message.key, value: toNotification(order) }] });
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
