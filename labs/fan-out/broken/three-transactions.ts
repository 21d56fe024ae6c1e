// expect-fail: atomic-fan-out
// One transaction per output topic, each carrying the batch's offsets: the single-stage pattern
// run three times. Each transaction is atomic on its own, but the fan-out is not: once the
// payments transaction has committed (offsets included), a crash before the inventory or the
// notifications transaction commits leaves orders with a payment and nothing else, and the
// restarted instance does not read them again.
import { Kafka, type KafkaMessage } from 'kafkajs';

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
const outputs: [string, (o: Order) => string][] = [
  [process.env.PAYMENTS_TOPIC!, (o) => JSON.stringify({ orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents })],
  [process.env.INVENTORY_TOPIC!, (o) => JSON.stringify({ orderId: o.orderId, sku: o.sku, quantity: -o.quantity })],
  [
    process.env.NOTIFICATIONS_TOPIC!,
    (o) => JSON.stringify({ orderId: o.orderId, customer: o.customer, text: `Order ${o.orderId} confirmed: ${o.quantity} x ${o.sku}` }),
  ],
];

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.ORDERS_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch, resolveOffset }) => {
    const orders = batch.messages.map((m: KafkaMessage) => ({ key: m.key, order: JSON.parse(m.value!.toString()) as Order }));
    const next = String(Number(batch.lastOffset()) + 1);
    for (const [topic, derive] of outputs) {
      const txn = await producer.transaction();
      try {
        await txn.send({ topic, messages: orders.map(({ key, order }) => ({ key, value: derive(order) })) });
        await txn.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }] });
        await txn.commit();
      } catch (err) {
        await txn.abort();
        throw err;
      }
      console.log(`committed ${topic} for partition ${batch.partition} up to ${batch.lastOffset()}`);
    }
    resolveOffset(batch.lastOffset());
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
