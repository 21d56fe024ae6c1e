// expect-fail: no-aborted-reads
// Idempotency keys and transactions are right, but the consumer reads uncommitted input:
// payment requests the shop wrote in aborted transactions are charged and confirmed, although they
// never happened.
import { Kafka, type EachBatchPayload } from 'kafkajs';

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
const kafka = new Kafka({ clientId: 'payments-charger', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const inputTopic = env('INPUT_TOPIC');
const outputTopic = env('OUTPUT_TOPIC');
const apiUrl = env('API_URL');
const groupId = env('GROUP_ID');

interface PaymentRequest {
  paymentId: string;
  amountCents: number;
  currency: string;
}

// One attempt may take at most ATTEMPT_TIMEOUT_MS; all of them together, with backoff, about 12 s.
// The calls happen before the transaction opens, so they never count against its timeout, and
// heartbeat() between attempts keeps the consumer in its group meanwhile.
const ATTEMPT_TIMEOUT_MS = 1_500;
const MAX_ATTEMPTS = 6;

class PermanentError extends Error {}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** POST /payments with a key derived from the payment: returns the API's confirmation (its body). */
async function charge(payment: PaymentRequest, heartbeat: () => Promise<void>): Promise<string> {
  // Scoped to the operation and a pure function of the input: identical on every attempt, in
  // this process or in the one that replaces it after a crash.
  const key = `charge:${payment.paymentId}`;
  let lastError: unknown;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    try {
      const res = await fetch(`${apiUrl}/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(payment),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.ok) return text; // 201, a new charge or the stored answer of an earlier one
      // 5xx: the outcome is unknown; 409: our first attempt is still in progress; 429: later.
      // All of them: try again with the same key. Any other 4xx will not get better.
      if (res.status < 500 && res.status !== 409 && res.status !== 429) {
        throw new PermanentError(`POST /payments ${payment.paymentId} -> ${res.status}: ${text}`);
      }
      lastError = new Error(`POST /payments ${payment.paymentId} -> ${res.status}`);
    } catch (err) {
      if (err instanceof PermanentError) throw err;
      lastError = err; // timed out or connection lost: maybe charged, maybe not; the key decides
    }
    if (attempt < MAX_ATTEMPTS) {
      const cap = Math.min(2_000, 100 * 2 ** attempt); // exponential backoff with jitter
      await sleep(cap / 2 + Math.random() * (cap / 2));
      await heartbeat();
    }
  }
  // Out of attempts: throw, so the batch is not committed and is processed again later, with the
  // same keys. Never carry on as if the payment were done.
  throw lastError;
}

const consumer = kafka.consumer({ groupId, readUncommitted: true });
const producer = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
// Register our transactional.id now (kafkajs does it at the first transaction): this fences a
// dead predecessor and aborts its open transaction before we read the committed offsets.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });

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
  // 1. Charge every payment of the batch, in order, before the transaction opens.
  const confirmations: { key: string; value: string }[] = [];
  for (const message of messages) {
    const payment = JSON.parse(message.value!.toString()) as PaymentRequest;
    confirmations.push({ key: payment.paymentId, value: await charge(payment, heartbeat) });
    await heartbeat();
  }
  // 2. Confirmations and offsets in one transaction: committed together or not at all.
  const txn = await producer.transaction();
  let committing = false;
  try {
    await txn.send({ topic: outputTopic, messages: confirmations });
    await txn.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    committing = true;
    await txn.commit();
  } catch (err) {
    // A failed commit() may have committed all the same (the coordinator decided before the reply
    // was lost, in a broker restart say), and kafkajs can abort neither then nor after a failed
    // abort. Redoing the batch from memory could write it twice: exit, and the fresh start fences
    // our transactional id, which settles that transaction, then reads the committed offsets.
    if (committing || !(await txn.abort().then(() => true, () => false))) {
      console.error(`transaction outcome unknown (${(err as Error).message}): restarting afresh`);
      process.exit(1);
    }
    throw err; // kafkajs delivers the batch again: the same keys make the repeat harmless
  }
  doneUpTo.set(batch.partition, BigInt(batch.lastOffset()) + 1n);
  resolveOffset(batch.lastOffset());
  console.log(`charged ${confirmations.length} payments from partition ${batch.partition} up to offset ${batch.lastOffset()}`);
}

await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: processBatch });

const isFenced = (err: unknown) => /fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(`${(err as { type?: string })?.type} ${(err as Error)?.message}`);
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (isFenced(payload.error) || !payload.restart) {
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
