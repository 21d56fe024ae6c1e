// expect-fail: no-loss
// Aborts the transaction when something fails, then swallows the error and returns as if the
// batch were done. kafkajs resolves the batch's last offset and, with autoCommit left at its
// default (on), commits it right away: the orders of the failed batch are never written.
import { Kafka } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-fan-out', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const groupId = process.env.GROUP_ID!;
const consumer = kafka.consumer({ groupId });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

type Order = { orderId: string; customer: string; sku: string; quantity: number; unitPriceCents: number };
const payment = (o: Order) => JSON.stringify({ orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents });
const inventory = (o: Order) => JSON.stringify({ orderId: o.orderId, sku: o.sku, quantity: -o.quantity });
const notification = (o: Order) =>
  JSON.stringify({ orderId: o.orderId, customer: o.customer, text: `Order ${o.orderId} confirmed: ${o.quantity} x ${o.sku}` });

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.ORDERS_TOPIC!, fromBeginning: true });
await consumer.run({
  eachBatch: async ({ batch, resolveOffset }) => {
    const txn = await producer.transaction();
    try {
      const orders = batch.messages.map((m) => ({ key: m.key, o: JSON.parse(m.value!.toString()) as Order }));
      await txn.send({ topic: process.env.PAYMENTS_TOPIC!, messages: orders.map(({ key, o }) => ({ key, value: payment(o) })) });
      await txn.send({ topic: process.env.INVENTORY_TOPIC!, messages: orders.map(({ key, o }) => ({ key, value: inventory(o) })) });
      await txn.send({ topic: process.env.NOTIFICATIONS_TOPIC!, messages: orders.map(({ key, o }) => ({ key, value: notification(o) })) });
      await txn.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }] }],
      });
      await txn.commit();
    } catch (err) {
      await txn.abort();
      console.error(`batch failed, skipping it: ${(err as Error).message}`);
    }
    resolveOffset(batch.lastOffset());
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
