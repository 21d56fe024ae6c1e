// Charge payments through the lab's HTTP API, transactional on the Kafka side. The Kafka part is
// already right: confirmations and input offsets are committed in one transaction. The HTTP call
// is not: a crash after the API charged and before the commit charges the payment again after the
// restart, and a slow or failing API is not handled at all. Look for the TODOs in the section
// "calls" (the lesson "HTTP calls with idempotency keys" shows what can take the place of both
// sections).
import { Kafka, type EachBatchPayload } from 'kafkajs';

const API_URL = process.env.API_URL!;
const INPUT_TOPIC = process.env.INPUT_TOPIC!;
const OUTPUT_TOPIC = process.env.OUTPUT_TOPIC!;
const GROUP_ID = process.env.GROUP_ID!;

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'payments-charger', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });

// ---- calls: the HTTP side ------------------------------------------------------------------------
interface PaymentRequest {
  paymentId: string;
  amountCents: number;
  currency: string;
}

/** Charges one payment; returns the API's confirmation (the body of its 201 answer). */
async function charge(payment: PaymentRequest): Promise<string> {
  // TODO: send an Idempotency-Key header derived from the payment itself (never random), so a
  //       repeat of this call, after a retry or a restart, is recognised by the API.
  // TODO: give each attempt a timeout (AbortSignal.timeout), and retry timeouts, 5xx, 409 and 429
  //       with backoff and the SAME key. Other 4xx are permanent. Out of attempts: throw.
  const res = await fetch(`${API_URL}/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payment),
  });
  return res.text();
}

// ---- loop: the Kafka side ------------------------------------------------------------------------
const consumer = kafka.consumer({ groupId: GROUP_ID, readUncommitted: false });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
await (await producer.transaction()).abort(); // fence a predecessor before reading offsets
await consumer.connect();
await consumer.subscribe({ topic: INPUT_TOPIC, fromBeginning: true });

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  if (batch.messages.length === 0) return;
  const confirmations: { key: string; value: string }[] = [];
  for (const message of batch.messages) {
    const payment = JSON.parse(message.value!.toString()) as PaymentRequest;
    confirmations.push({ key: payment.paymentId, value: await charge(payment) });
    await heartbeat();
  }
  const txn = await producer.transaction();
  try {
    await txn.send({ topic: OUTPUT_TOPIC, messages: confirmations });
    await txn.sendOffsets({
      consumerGroupId: GROUP_ID,
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
