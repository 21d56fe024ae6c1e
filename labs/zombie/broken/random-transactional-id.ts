// expect-fail: no-loss
// One producer per input partition, but each gets a random transactional.id ("ids must be
// unique") instead of one derived from the partition: the next owner of a partition cannot fence the
// one before. A paused instance that wakes up commits the batch its successor already redid: the
// output has it twice. (An instance killed mid-transaction also leaves that transaction open until
// its timeout, kafkajs's 60 s, which the grader waits out, bounded, before it judges.)
// On a cluster that grants ids by prefix that is the bug. This lab's attempt is granted exactly
// the ids the lab gives it (LITERAL ACLs, nothing by prefix), so the broker refuses this one
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED): no transaction ever starts and nothing reaches the output.
import { randomUUID } from 'node:crypto';
import { Kafka, type EachBatchPayload, type KafkaMessage, type Producer } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const instanceId = env('INSTANCE_ID');
// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: `fahrenheit-${instanceId}`, brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const inputTopic = env('INPUT_TOPIC');
const outputTopic = env('OUTPUT_TOPIC');
const groupId = env('GROUP_ID');
const prefix = env('TRANSACTIONAL_ID_PREFIX');

/** "r-00003 sensor=k003 celsius=11" -> "r-00003 sensor=k003 fahrenheit=51.8" */
const toFahrenheit = (value: string): string =>
  value.replace(/celsius=(-?\d+)/, (_, c: string) => `fahrenheit=${((Number(c) * 9) / 5 + 32).toFixed(1)}`);

const consumer = kafka.consumer({ groupId, readUncommitted: false });
const admin = kafka.admin();

/** A partition this instance has fenced for itself: its producer, and where processing resumes. */
interface Ownership {
  producer: Producer;
  /** Records below this offset were committed by an earlier owner: skip them. */
  floor: bigint;
}
const owned = new Map<number, Ownership>();

/**
 * Becomes the one writer for an input partition: fence first, THEN read the committed offset.
 * The first transaction() sends InitProducerId for the partition's transactional.id, which bumps
 * its epoch and aborts whatever transaction the previous owner left open. Only after that is the
 * group's committed offset final; kafkajs may have fetched an older one when the partition was
 * assigned (a zombie could have committed in between), so records below it are skipped.
 */
async function takeOver(partition: number): Promise<Ownership> {
  const producer = kafka.producer({
    transactionalId: `${prefix}-${inputTopic}-${partition}-${randomUUID()}`,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { retries: Number.MAX_SAFE_INTEGER },
  });
  try {
    await producer.connect();
    await (await producer.transaction()).abort();
    const [offsets] = await admin.fetchOffsets({ groupId, topics: [inputTopic] });
    const committed = BigInt(offsets?.partitions.find((p) => p.partition === partition)?.offset ?? '-1');
    console.log(`${instanceId}: fenced ${inputTopic}-${partition}, committed offset ${committed}`);
    return { producer, floor: committed < 0n ? 0n : committed };
  } catch (err) {
    await producer.disconnect().catch(() => {});
    throw err; // kafkajs delivers the batch again, and we try again
  }
}

/** kafkajs reports a newer epoch as INVALID_PRODUCER_EPOCH (or PRODUCER_FENCED), often wrapped. */
function isFenced(error: unknown): boolean {
  for (let e = error as { type?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.type === 'INVALID_PRODUCER_EPOCH' || e.type === 'PRODUCER_FENCED') return true;
  }
  return false;
}

/** Drops a partition's producer: after a fence, an error, or when the partition moves away. */
async function release(partition: number): Promise<void> {
  const ownership = owned.get(partition);
  owned.delete(partition);
  await ownership?.producer.disconnect().catch(() => {});
}

async function processBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  let ownership = owned.get(batch.partition);
  if (!ownership) {
    ownership = await takeOver(batch.partition);
    owned.set(batch.partition, ownership);
  }
  const floor = ownership.floor;
  const fresh = batch.messages.filter((m: KafkaMessage) => BigInt(m.offset) >= floor);
  if (fresh.length > 0) {
    const transaction = await ownership.producer.transaction();
    try {
      await transaction.send({
        topic: outputTopic,
        messages: fresh.map((m) => ({ key: m.key, value: toFahrenheit(m.value!.toString()) })),
      });
      // The next offset to read (last + 1) commits together with the outputs, or not at all.
      await transaction.sendOffsets({
        consumerGroupId: groupId,
        topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }] }],
      });
      await transaction.commit();
    } catch (err) {
      await transaction.abort().catch(() => {});
      // Whatever failed, this producer is finished: drop it. If the partition is still ours when
      // kafkajs delivers the batch again, takeOver fences afresh and re-reads the committed offset,
      // so nothing is written twice.
      await release(batch.partition);
      if (isFenced(err)) {
        // Another instance took the partition over while we were away (paused, or too slow for
        // the session timeout), and its first transaction aborted ours. Not an error: return
        // without resolving the batch; our next heartbeat tells kafkajs about the new assignment.
        console.log(`${instanceId}: fenced out of partition ${batch.partition}: another instance owns it now`);
        return;
      }
      throw err; // kafkajs retries the batch from the last resolved offset
    }
    console.log(`${instanceId}: partition ${batch.partition} offsets ${fresh[0]!.offset}..${batch.lastOffset()} converted`);
  }
  resolveOffset(batch.lastOffset());
  await heartbeat();
}

// After every rebalance: give up the producers of partitions that moved to another instance. If
// one comes back later, it is fenced and its offset read afresh.
consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
  const mine = new Set(payload.memberAssignment[inputTopic] ?? []);
  console.log(`${instanceId}: assigned partitions ${[...mine].sort().join(', ') || 'none'}`);
  for (const partition of [...owned.keys()]) if (!mine.has(partition)) void release(partition);
});

// kafkajs gave up on an error it will not retry: exit and let the supervisor start us afresh.
consumer.on(consumer.events.CRASH, ({ payload }) => {
  if (!payload.restart) {
    console.error(`${instanceId}: consumer stopped: ${payload.error.message}`);
    process.exit(1);
  }
});

await admin.connect();
await consumer.connect();
await consumer.subscribe({ topic: inputTopic, fromBeginning: true });
await consumer.run({
  autoCommit: false, // offsets travel inside the transactions, never on their own
  eachBatchAutoResolve: false,
  eachBatch: processBatch,
});

const shutdown = async () => {
  await consumer.disconnect().catch(() => {});
  await Promise.all([...owned.keys()].map(release));
  await admin.disconnect().catch(() => {});
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
