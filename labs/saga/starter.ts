// An order saga, transactional on the Kafka side: one event per order, committed with the input
// offsets. The saga itself is not safe yet: its steps go out without Idempotency-Keys (a restart
// after a crash reserves and charges again), a slow or failing service is not handled, and a
// declined card leaves the stock reserved for good. Look for the TODOs.
import { Kafka, type EachBatchPayload } from 'kafkajs';

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-saga', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
const ordersTopic = process.env.ORDERS_TOPIC!;
const eventsTopic = process.env.EVENTS_TOPIC!;
const apiUrl = process.env.API_URL!;
const groupId = process.env.GROUP_ID!;

interface Order {
  orderId: string;
  customer: string;
  sku: string;
  quantity: number;
  unitPriceCents: number;
  card: string;
}

/** POSTs one saga step; returns the answer's status. */
async function step(path: string, body: object): Promise<number> {
  // TODO: an Idempotency-Key that names the step and the order (never random), so a repeat
  //       after a retry or a restart is recognised by the service.
  // TODO: a timeout per attempt, and retries of timeouts, 5xx, 409 and 429 with backoff and the
  //       SAME key. Out of attempts: throw, never carry on.
  const res = await fetch(`${apiUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

async function runSaga(order: Order): Promise<string> {
  const stock = { orderId: order.orderId, sku: order.sku, quantity: order.quantity };
  const amountCents = order.quantity * order.unitPriceCents;
  await step('/inventory/reservations', stock);
  const charged = await step('/charges', { orderId: order.orderId, amountCents, card: order.card });
  if (charged === 402) {
    // TODO: compensate: release the reservation (POST /inventory/releases) before the saga ends.
    return JSON.stringify({ type: 'OrderCancelled', orderId: order.orderId, reason: 'card_declined' });
  }
  return JSON.stringify({ type: 'OrderCompleted', orderId: order.orderId, amountCents });
}

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
await (await producer.transaction()).abort(); // fence a predecessor before reading offsets
await consumer.connect();
await consumer.subscribe({ topic: ordersTopic, fromBeginning: true });

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  if (batch.messages.length === 0) return;
  const events: { key: string; value: string }[] = [];
  for (const message of batch.messages) {
    const order = JSON.parse(message.value!.toString()) as Order;
    events.push({ key: order.orderId, value: await runSaga(order) });
    await heartbeat();
  }
  const txn = await producer.transaction();
  try {
    await txn.send({ topic: eventsTopic, messages: events });
    await txn.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    await txn.commit();
  } catch (err) {
    await txn.abort().catch(() => {});
    throw err;
  }
  resolveOffset(batch.lastOffset());
}

await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await producer.disconnect();
  process.exit(0);
});
