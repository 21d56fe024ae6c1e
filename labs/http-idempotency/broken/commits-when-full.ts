// expect-fail: no-hanging-transactions
// Batches for speed: one Kafka transaction takes batch after batch, and the batch that
// finds it holding COMMIT_EVERY confirmations commits it before opening the next. Nothing else ever
// commits: no timer, no flush when the input goes quiet. COMMIT_EVERY is sized for production
// traffic; this lab's input never fills it, so the open transaction, holding the confirmations sent so
// far, stays open while the idle charger waits for more input, and every read_committed reader of
// OUTPUT_TOPIC stops at it.
import { Kafka, type EachBatchPayload, type Transaction } from 'kafkajs';

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

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const producer = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });

await producer.connect();
// Register our transactional.id now (kafkajs does it at the first transaction): this fences a
// dead predecessor and aborts its open transaction before we read the committed offsets.
await (await producer.transaction()).abort();
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });

// What this process has already put into a transaction, per partition: a rebalance can deliver
// it again, and the open transaction already holds it.
const doneUpTo = new Map<number, bigint>();
// Fewer, bigger transactions for speed: confirmations go into one transaction batch after batch
// until it holds COMMIT_EVERY of them; the batch that finds it full commits it first.
// Sized for production traffic: at a trickle (this lab's input is smaller) it is never reached.
const COMMIT_EVERY = 1000;
let open: { txn: Transaction; pending: number } | null = null;

// Confirmations already sent sit in the open transaction: if anything fails, the only safe move is
// to abort it and start afresh from the committed offsets (the keys make the repeated charges harmless).
async function giveUp(err: unknown, committing: boolean): Promise<never> {
  if (!committing && open) await open.txn.abort().catch(() => undefined); // exiting anyway: the restart fences us
  console.error(`transaction failed (${(err as Error).message}): restarting afresh`);
  process.exit(1);
}

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  const messages = batch.messages.filter((m) => BigInt(m.offset) >= (doneUpTo.get(batch.partition) ?? 0n));
  if (messages.length === 0) {
    if (batch.messages.length > 0) resolveOffset(batch.lastOffset());
    return;
  }
  // 1. Charge every payment of the batch, in order.
  const confirmations: { key: string; value: string }[] = [];
  for (const message of messages) {
    const payment = JSON.parse(message.value!.toString()) as PaymentRequest;
    confirmations.push({ key: payment.paymentId, value: await charge(payment, heartbeat) });
    await heartbeat();
  }
  // 2. A full transaction is committed before this batch goes into a fresh one.
  if (open && open.pending >= COMMIT_EVERY) {
    await open.txn.commit().catch((err) => giveUp(err, true));
    console.log(`committed ${open.pending} confirmations`);
    open = null;
  }
  try {
    open ??= { txn: await producer.transaction(), pending: 0 };
    await open.txn.send({ topic: outputTopic, messages: confirmations });
    await open.txn.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
  } catch (err) {
    await giveUp(err, false);
  }
  open!.pending += confirmations.length;
  doneUpTo.set(batch.partition, BigInt(batch.lastOffset()) + 1n);
  resolveOffset(batch.lastOffset());
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
