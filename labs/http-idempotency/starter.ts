// Charge payments through the lab's HTTP API, transactional on the Kafka side. The Kafka part is
// already right: confirmations and input offsets are committed in one transaction. The HTTP call
// is not: a crash after the API charged and before the commit charges the payment again after the
// restart, and a slow or failing API is not handled at all. Look for the TODOs.
import { Kafka, type EachBatchPayload } from 'kafkajs';

const kafka = new Kafka({ clientId: 'payments-charger', brokers: process.env.KAFKA_BROKERS!.split(',') });
const inputTopic = process.env.INPUT_TOPIC!;
const outputTopic = process.env.OUTPUT_TOPIC!;
const apiUrl = process.env.API_URL!;
const groupId = process.env.GROUP_ID!;

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
  const res = await fetch(`${apiUrl}/payments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(payment),
  });
  return res.text();
}

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: process.env.TRANSACTIONAL_ID!, idempotent: true, maxInFlightRequests: 1 });

await producer.connect();
await (await producer.transaction()).abort(); // fence a predecessor before reading offsets
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });

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
    await txn.send({ topic: outputTopic, messages: confirmations });
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
