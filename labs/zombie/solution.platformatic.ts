// Zombie fencing with @platformatic/kafka: ONE transactional.id per instance (TRANSACTIONAL_ID),
// the pattern that fails this lab in kafkajs (broken/per-instance-id), is safe here. Two things
// stop an instance that was frozen mid-transaction and rebalanced away (KIP-447):
//  - addOffset sends the group generation and member id the batch was read with: after the
//    rebalance the coordinator refuses it (ILLEGAL_GENERATION) and the zombie aborts;
//  - the new owner asks for stable offsets (require_stable): while the zombie's transaction holds
//    offsets for its partitions, it waits for that transaction to end instead of redoing the batch.
// The consumer reads read_committed (this client's default).
import { Consumer, Producer, stringDeserializers, stringSerializers, type Message, type MessagesStream } from '@platformatic/kafka';
import { setTimeout as sleep } from 'node:timers/promises';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

type Record = Message<string, string, string, string>;
type Stream = MessagesStream<string, string, string, string>;

const brokers = env('KAFKA_BROKERS').split(',');
const inputTopic = env('INPUT_TOPIC');
const outputTopic = env('OUTPUT_TOPIC');

/** `r-00003 sensor=k003 celsius=11` becomes `r-00003 sensor=k003 fahrenheit=51.8`. */
const toFahrenheit = (value: string): string =>
  value.replace(/celsius=(-?\d+)/, (_, c: string) => `fahrenheit=${((Number(c) * 9) / 5 + 32).toFixed(1)}`);

// Retries, set on each client: @platformatic/kafka retries a failed request 3 times, 1 s apart,
// unless told otherwise, except an idempotent producer that sets no count, which retries without
// limit. Keep the producer unlimited: a send it gave up on may have been written all the same.
// The consumer sets its own count below, for the wait on stable offsets; this lab shortens the
// delay between tries where a client sets none (see its environment panel).
const producer = new Producer({
  clientId: `fahrenheit-${process.env.INSTANCE_ID}`,
  bootstrapBrokers: brokers,
  idempotent: true,
  transactionalId: env('TRANSACTIONAL_ID'),
  serializers: stringSerializers,
  retries: Number.MAX_SAFE_INTEGER,
});
const consumer = new Consumer({
  clientId: `fahrenheit-${process.env.INSTANCE_ID}`,
  groupId: env('GROUP_ID'),
  bootstrapBrokers: brokers,
  deserializers: stringDeserializers,
  autocommit: false,
  // A new owner's wait for stable offsets lasts until the zombie's transaction ends: at the latest
  // when the coordinator aborts it (this client's transaction timeout is its request timeout,
  // 5 s by default). Retry the offset fetch for longer than that.
  retries: 40,
  retryDelay: 250,
});

// Claim our transactional.id before reading any offset: InitProducerId (run by the first
// beginTransaction) fences an older instance with this id and aborts its open transaction, so
// the offsets we resume from are final. The empty transaction is only forgotten (cancel), since
// the broker refuses to end a transaction that never wrote anything.
await (await producer.beginTransaction()).cancel();

/** Messages as they arrive, taken in batches. */
function batches(stream: Stream) {
  const queue: Record[] = [];
  let wake: (() => void) | null = null;
  let failure: unknown = null;
  stream.on('data', (m: Record) => (queue.push(m), wake?.()));
  stream.on('error', (err: unknown) => ((failure = err), wake?.()));
  return async (): Promise<Record[]> => {
    while (queue.length === 0 && !failure) await new Promise<void>((r) => (wake = r));
    if (failure) throw failure;
    return queue.splice(0, queue.length);
  };
}

/** Reading from the group's committed offsets (this client asks for stable ones). */
const open = () => consumer.consume({ topics: [inputTopic], mode: 'committed', fallbackMode: 'earliest', autocommit: false });

/** The broker's error codes inside a client error (this client nests them in `errors`). */
const why = (err: unknown): string => {
  const e = err as { apiId?: string; message?: string; errors?: unknown[] };
  const inner = [...new Set((e?.errors ?? []).map(why).filter(Boolean))];
  return e?.apiId ?? (inner.length ? inner.join(', ') : String(e?.message ?? err));
};

/** Errors after which only a fresh start is safe: fenced, or a commit whose outcome is unknown. */
class RestartNeeded extends Error {}

/** The next offset to read per partition, as far as this process has committed. */
const doneUpTo = new Map<number, bigint>();

async function processBatch(batch: Record[]): Promise<void> {
  const records = batch.filter((m) => m.offset >= (doneUpTo.get(m.partition) ?? 0n));
  if (records.length === 0) return;
  // A batch read in an older group generation belongs to partitions we may have lost: let the
  // caller reopen the stream from the committed offsets instead.
  if (records.some((m) => (m.metadata.consumer as { generationId: number }).generationId !== consumer.generationId)) throw new Error('rebalanced while reading');
  const byPartition = new Map<number, Record[]>();
  for (const m of records) byPartition.set(m.partition, [...(byPartition.get(m.partition) ?? []), m]);
  const txn = await producer.beginTransaction();
  let committing = false;
  try {
    // One send per partition: every request goes to one partition leader.
    for (const [partition, msgs] of byPartition) {
      await txn.send({ messages: msgs.map((m) => ({ topic: outputTopic, key: m.key, value: toFahrenheit(m.value), partition })) });
    }
    await txn.addConsumer(consumer);
    // One TxnOffsetCommit per partition, carrying the generation the batch was read in (KIP-447).
    // Sequentially: this client merges concurrent addOffset calls of one producer into one.
    for (const msgs of byPartition.values()) await txn.addOffset(msgs.at(-1)!);
    committing = true;
    await txn.commit();
  } catch (err) {
    if (committing) throw new RestartNeeded(`commit outcome unknown: ${why(err)}`);
    await txn.abort().catch((abortErr: Error) => {
      throw new RestartNeeded(`abort failed (${why(abortErr)}) after ${why(err)}`);
    });
    throw err;
  }
  for (const [partition, msgs] of byPartition) doneUpTo.set(partition, msgs.at(-1)!.offset + 1n);
  for (const [partition, msgs] of byPartition) console.log(`committed ${msgs.length} records from partition ${partition} up to offset ${msgs.at(-1)!.offset}`);
}

// Leave the group on SIGTERM, so a successor gets our partitions at once; an open transaction
// is aborted by the successor's InitProducerId.
const shutdown = async () => {
  await consumer.close(true).catch(() => undefined);
  await producer.close().catch(() => undefined);
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

let stream = await open();
let next = batches(stream);
/**
 * Batches aborted in a row. A few are normal (a rebalance, a leader moving); many mean this
 * producer is stuck in a state only a fresh one clears: restart then, rather than spin (a grade
 * once showed a live instance aborting 3,098 records in 130 s).
 */
let abortedInARow = 0;
const MAX_ABORTED_IN_A_ROW = 5;
for (;;) {
  try {
    await processBatch(await next());
    abortedInARow = 0;
  } catch (err) {
    if (err instanceof RestartNeeded || /fenc|INVALID_PRODUCER_EPOCH|PRODUCER_FENCED/i.test(`${why(err)} ${(err as Error)?.message}`)) {
      console.error(`${(err as Error).message}: restarting afresh`);
      process.exit(1);
    }
    // Aborted for sure: read again from the committed offsets. The new stream opens before the old
    // one closes, so the consumer stays subscribed and the group does not rebalance.
    // ILLEGAL_GENERATION here is KIP-447 at work: the batch was read before a rebalance.
    console.error(`batch aborted (${why(err)}); reading again from the committed offsets`);
    if (++abortedInARow >= MAX_ABORTED_IN_A_ROW) {
      console.error(`${abortedInARow} batches in a row aborted: restarting afresh`);
      process.exit(1);
    }
    await sleep(100 * abortedInARow); // a moment for the cause (a moving leader, say) to pass
    const old = stream;
    stream = await open();
    next = batches(stream);
    old.removeAllListeners('data');
    await old.close().catch(() => undefined); // the old stream may already have failed
  }
}
