// expect-fail: no-duplicates
// All three topics are written in one transaction, but the offsets are committed by the
// consumer AFTER the transaction commits: a crash between the two re-reads a batch whose
// payments, stock movements and notifications are already committed, and writes them again.
import { Kafka } from 'kafkajs';

const kafka = new Kafka({ clientId: 'order-fan-out', brokers: process.env.KAFKA_BROKERS!.split(',') });
const groupId = process.env.GROUP_ID!;
const consumer = kafka.consumer({ groupId });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1 });

type Order = { orderId: string; customer: string; sku: string; quantity: number; unitPriceCents: number };
const payment = (o: Order) => JSON.stringify({ orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents });
const inventory = (o: Order) => JSON.stringify({ orderId: o.orderId, sku: o.sku, quantity: -o.quantity });
const notification = (o: Order) =>
  JSON.stringify({ orderId: o.orderId, customer: o.customer, text: `Order ${o.orderId} confirmed: ${o.quantity} x ${o.sku}` });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.ORDERS_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    const txn = await producer.transaction();
    try {
      const orders = batch.messages.map((m) => ({ key: m.key, o: JSON.parse(m.value!.toString()) as Order }));
      await txn.send({ topic: process.env.PAYMENTS_TOPIC!, messages: orders.map(({ key, o }) => ({ key, value: payment(o) })) });
      await txn.send({ topic: process.env.INVENTORY_TOPIC!, messages: orders.map(({ key, o }) => ({ key, value: inventory(o) })) });
      await txn.send({ topic: process.env.NOTIFICATIONS_TOPIC!, messages: orders.map(({ key, o }) => ({ key, value: notification(o) })) });
      await txn.commit();
    } catch (err) {
      await txn.abort();
      throw err;
    }
    await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }]);
    resolveOffset(batch.lastOffset());
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
