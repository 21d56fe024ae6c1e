// expect-fail: no-duplicates
// No transaction at all: an idempotent producer writes the three topics in one sendBatch call
// and the consumer auto-commits its offsets after each batch. Idempotence only stops the
// producer's own retries from writing twice; a crash after the send and before the auto-commit
// makes the restarted instance process the same orders again, and they are written again.
import { Kafka } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-fan-out', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

type Order = { orderId: string; customer: string; sku: string; quantity: number; unitPriceCents: number };

await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: process.env.ORDERS_TOPIC!, fromBeginning: true });
await consumer.run({
  autoCommit: true,
  eachBatch: async ({ batch }) => {
    const orders = batch.messages.map((m) => ({ key: m.key, o: JSON.parse(m.value!.toString()) as Order }));
    await producer.sendBatch({
      topicMessages: [
        { topic: process.env.PAYMENTS_TOPIC!, messages: orders.map(({ key, o }) => ({ key, value: JSON.stringify({ orderId: o.orderId, amountCents: o.quantity * o.unitPriceCents }) })) },
        { topic: process.env.INVENTORY_TOPIC!, messages: orders.map(({ key, o }) => ({ key, value: JSON.stringify({ orderId: o.orderId, sku: o.sku, quantity: -o.quantity }) })) },
        {
          topic: process.env.NOTIFICATIONS_TOPIC!,
          messages: orders.map(({ key, o }) => ({
            key,
            value: JSON.stringify({ orderId: o.orderId, customer: o.customer, text: `Order ${o.orderId} confirmed: ${o.quantity} x ${o.sku}` }),
          })),
        },
      ],
    });
  },
});
process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
