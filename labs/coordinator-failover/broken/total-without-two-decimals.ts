// expect-fail: transform-correct
// Survives the coordinator failover exactly once, but prints the total as a plain number, without
// toFixed(2): 3 x tea becomes "= 13.5" and 2 x tea "= 9" where the contract asks for "= 13.50" and
// "= 9.00". Any total that does not end in a non-zero cent is written wrong.
import { Kafka, type Consumer, type EachBatchPayload, type Producer } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 4 here on purpose: with this lab's short backoff (see
// its environment panel) a commit caught by the coordinator's death fails after about 1.2 s
// instead of outlasting the failover, so the recovery path runs. In production give the client 10
// (about two minutes with kafkajs's default backoff, 300 ms doubling to at most 30 s apart). An
// idempotent or transactional producer sets its own `retry: { retries: Number.MAX_SAFE_INTEGER }`:
// a send it gave up on may have been written, and its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'order-pricer', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 4 } });
const ordersTopic = env('ORDERS_TOPIC');
const pricedTopic = env('PRICED_TOPIC');
const groupId = env('GROUP_ID');
const transactionalId = env('TRANSACTIONAL_ID');

// ---- the transform ----------------------------------------------------------------------------

const PRICES_CENTS: Record<string, number> = { tea: 450, coffee: 320, cake: 275, juice: 390, bagel: 210 };

/** "o00017 3 x tea" -> "o00017 3 x tea = 13.50" */
function price(line: string): string {
  const [, quantity, , product] = line.split(' ');
  const unit = PRICES_CENTS[product ?? ''];
  if (unit === undefined) throw new Error(`unknown product in "${line}"`);
  return `${line} = ${(Number(quantity) * unit) / 100}`;
}

// ---- one life of the pipeline -----------------------------------------------------------------

interface Life {
  producer: Producer;
  consumer: Consumer;
  ended: boolean;
}

let stopping = false;
let current: Life | null = null;

const isFenced = (err: unknown) => /fenced|old epoch|INVALID_PRODUCER_EPOCH/i.test(`${(err as { type?: string })?.type} ${(err as Error)?.message}`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function startLife(): Promise<void> {
  const life: Life = {
    producer: kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } }),
    // kafkajs restarts a crashed consumer by itself, and the restarted one reads the committed
    // offsets at once, possibly while our last transaction is still undecided. We restart it
    // ourselves instead, after fencing.
    consumer: kafka.consumer({ groupId, readUncommitted: false, retry: { restartOnFailure: async () => false } }),
    ended: false,
  };
  current = life;
  try {
    await life.producer.connect();
    // Fence first: InitProducerId (sent by kafkajs on the first transaction()) makes the coordinator
    // finish whatever transaction our id left open, committing it if its commit had been decided
    // and aborting it otherwise, and bumps the epoch so that no older producer can commit again.
    await (await life.producer.transaction()).abort();
    // Only now are the committed offsets final.
    await life.consumer.connect();
    await life.consumer.subscribe({ topic: ordersTopic, fromBeginning: true });
    life.consumer.on(life.consumer.events.CRASH, ({ payload }) => endLife(life, payload.error));
    await life.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: (payload) => processBatch(life, payload),
    });
  } catch (err) {
    await endLife(life, err);
  }
}

async function processBatch(life: Life, { batch, resolveOffset, heartbeat }: EachBatchPayload): Promise<void> {
  if (life.ended) throw new Error('this life has ended; a new one takes over');
  if (batch.messages.length === 0) return;
  let transaction;
  try {
    transaction = await life.producer.transaction();
    // One send, one partition, one leader: the priced order goes to the partition number of its
    // order. (A kafkajs send that spans several leaders can write part of itself twice when one
    // leader answers with a retriable error, and inside a transaction both copies commit.)
    await transaction.send({
      topic: pricedTopic,
      messages: batch.messages.map((m) => ({ key: m.key, value: price(m.value?.toString() ?? ''), partition: batch.partition })),
    });
    await transaction.sendOffsets({
      consumerGroupId: groupId,
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
    });
    await transaction.commit();
  } catch (err) {
    // Committed or not? We cannot know from here. Abort if kafkajs still lets us (it does not after
    // a failed commit), then hand over to a new life, which fences and re-reads the offsets. Never
    // resolve the batch: that would move this consumer past records whose fate is unknown.
    await transaction?.abort().catch(() => {});
    void endLife(life, err);
    throw err;
  }
  resolveOffset(batch.lastOffset());
  console.log(`committed ${batch.messages.length} from partition ${batch.partition} up to offset ${batch.lastOffset()}`);
  await heartbeat();
}

/** Ends a life once (from a failed transaction, a consumer crash or a failed start) and starts the next. */
async function endLife(life: Life, err: unknown): Promise<void> {
  if (life.ended) return;
  life.ended = true;
  if (isFenced(err)) {
    console.error('fenced: a newer instance owns our transactional.id, exiting');
    process.exit(1);
  }
  console.error(`restarting the pipeline after: ${(err as Error)?.message ?? err}`);
  // Not awaited inside eachBatch: disconnect waits for the batch in progress to return.
  await sleep(0);
  await life.consumer.disconnect().catch(() => {});
  await life.producer.disconnect().catch(() => {});
  if (stopping || current !== life) return;
  await sleep(500); // the coordinator may still be moving: do not hammer it
  if (!stopping) await startLife();
}

await startLife();

const shutdown = async () => {
  stopping = true;
  if (current) {
    current.ended = true;
    await current.consumer.disconnect().catch(() => {});
    await current.producer.disconnect().catch(() => {});
  }
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
