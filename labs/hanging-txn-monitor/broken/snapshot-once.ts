// expect-fail: hanging-transaction-reported
// Reads the coordinator's log once at start-up, like loading a table, then only polls offsets.
// The blocked lag is measured right, but a transaction that starts after the snapshot has no
// name in it, so the hang is never attributed to anyone and no alert is ever written.
import { Kafka } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const watchTopic = env('WATCH_TOPIC');
const alertsTopic = env('ALERTS_TOPIC');
const threshold = Number(env('BLOCKED_LAG_THRESHOLD'));
const hangMs = Number(env('HANG_SECONDS')) * 1000;
const POLL_MS = 1_000;
const TXN_LOG = '__transaction_state';
// The coordinator aborts every transaction older than transaction.max.timeout.ms (15 min by
// default), so the record of a still-open transaction is never older than that: no need to read
// the coordinator's whole history.
const LOOKBACK_MS = 15 * 60_000;

// ---- the coordinator's log ----------------------------------------------------------------------
// key:   int16 record type (0) + int16 length + transactional id
// value: int16 version; producerId int64, epoch int16, timeout int32, state int8, partitions
//        [{topic, [partition int32]}], lastUpdate int64, start int64. Version 1+ is "flexible":
//        lengths are unsigned varints of length + 1, and structs end with tagged fields.
const ONGOING = 1;

interface TxnState {
  transactionalId: string;
  producerId: string;
  epoch: number;
  state: number;
  partitions: Map<string, number[]>;
  startMs: number;
}

function decodeTransactionalId(key: Buffer): string | null {
  if (key.readInt16BE(0) !== 0) return null; // another record type
  const length = key.readInt16BE(2);
  return key.toString('utf8', 4, 4 + length);
}

function decodeState(transactionalId: string, value: Buffer): TxnState {
  let pos = 0;
  const version = value.readInt16BE(pos);
  pos += 2;
  const flexible = version >= 1;
  const uvarint = () => {
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = value[pos++]!;
      result += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return result;
    }
  };
  const length = (classic: () => number) => (flexible ? uvarint() - 1 : classic());
  const skipTaggedFields = () => {
    if (!flexible) return;
    for (let n = uvarint(); n > 0; n--) {
      uvarint(); // tag
      pos += uvarint(); // size, then skip the field
    }
  };
  const producerId = value.readBigInt64BE(pos).toString();
  const epoch = value.readInt16BE(pos + 8);
  const state = value.readInt8(pos + 14); // after the int32 timeout
  pos += 15;
  const partitions = new Map<string, number[]>();
  const topics = length(() => { pos += 4; return value.readInt32BE(pos - 4); });
  for (let t = 0; t < topics; t++) {
    const nameLength = length(() => { pos += 2; return value.readInt16BE(pos - 2); });
    const topic = value.toString('utf8', pos, pos + nameLength);
    pos += nameLength;
    const count = length(() => { pos += 4; return value.readInt32BE(pos - 4); });
    const ids: number[] = [];
    for (let i = 0; i < count; i++, pos += 4) ids.push(value.readInt32BE(pos));
    skipTaggedFields();
    partitions.set(topic, ids);
  }
  pos += 8; // last update time
  const startMs = Number(value.readBigInt64BE(pos));
  return { transactionalId, producerId, epoch, state, partitions, startMs };
}

// ---- what the monitor knows -----------------------------------------------------------------------
const transactions = new Map<string, TxnState>(); // latest state per transactional id
const highWatermarks = new Map<number, number>(); // WATCH_TOPIC partition -> high watermark
const alerted = new Set<string>();

/** The transaction that holds a partition's LSO: the oldest Ongoing one writing to it. */
function blockerOf(partition: number): TxnState | null {
  let oldest: TxnState | null = null;
  for (const txn of transactions.values()) {
    if (txn.state !== ONGOING || !txn.partitions.get(watchTopic)?.includes(partition)) continue;
    if (!oldest || txn.startMs < oldest.startMs) oldest = txn;
  }
  return oldest;
}

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'txn-monitor', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const admin = kafka.admin();
const producer = kafka.producer();
// read_uncommitted: its fetches report the high watermark, and it reads the open records too.
const consumer = kafka.consumer({ groupId: env('GROUP_ID'), readUncommitted: true });

await admin.connect();
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: watchTopic, fromBeginning: true });
await consumer.run({
  autoCommit: false, // a monitor re-reads on restart; it owns no position
  eachBatch: async ({ batch }) => {
    highWatermarks.set(batch.partition, Number(batch.highWatermark));
  },
});

// BUG: the coordinator's log is loaded once, like a table, and never followed afterwards.
// Transactions that start after this point are unknown to the monitor.
async function loadTransactionsOnce(): Promise<void> {
  const ends = await admin.fetchTopicOffsets(TXN_LOG);
  const starts = await admin.fetchTopicOffsetsByTimestamp(TXN_LOG, Date.now() - LOOKBACK_MS);
  const pending = new Map(ends.filter((e) => Number(e.offset) > Number(starts.find((s) => s.partition === e.partition)?.offset ?? 0)).map((e) => [e.partition, Number(e.offset)]));
  if (pending.size === 0) return;
  const snapshot = kafka.consumer({ groupId: `${env('GROUP_ID')}-snapshot` });
  await snapshot.connect();
  await snapshot.subscribe({ topic: TXN_LOG, fromBeginning: true });
  let done: () => void = () => {};
  const caughtUp = new Promise<void>((resolve) => (done = resolve));
  await snapshot.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      for (const message of batch.messages) {
        const id = message.key ? decodeTransactionalId(message.key) : null;
        if (id === null) continue;
        if (message.value) transactions.set(id, decodeState(id, message.value));
        else transactions.delete(id);
      }
      if (Number(batch.lastOffset()) + 1 >= (pending.get(batch.partition) ?? 0)) pending.delete(batch.partition);
      if (pending.size === 0) done();
    },
  });
  for (const { partition, offset } of starts) snapshot.seek({ topic: TXN_LOG, partition, offset });
  await Promise.race([caughtUp, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  await snapshot.disconnect();
  console.log(`loaded ${transactions.size} transactional ids from ${TXN_LOG}`);
}
await loadTransactionsOnce();

async function check(): Promise<void> {
  // fetchTopicOffsets asks for read_committed offsets: its `offset` is the LAST STABLE OFFSET.
  const stable = await admin.fetchTopicOffsets(watchTopic);
  const now = Date.now();
  for (const { partition, offset } of stable) {
    const hwm = highWatermarks.get(partition);
    if (hwm === undefined) continue;
    const blockedLag = hwm - Number(offset);
    if (blockedLag < threshold) continue;
    const blocker = blockerOf(partition);
    if (!blocker || now - blocker.startMs < hangMs) continue;
    const key = `${blocker.transactionalId}/${blocker.producerId}/${blocker.epoch}/${blocker.startMs}/${partition}`;
    if (alerted.has(key)) continue; // one alert per transaction and partition
    const alert = {
      transactionalId: blocker.transactionalId,
      topic: watchTopic,
      partition,
      blockedLag,
      openSeconds: Math.round((now - blocker.startMs) / 1000),
      producerId: blocker.producerId,
      producerEpoch: blocker.epoch,
    };
    await producer.send({ topic: alertsTopic, messages: [{ key: blocker.transactionalId, value: JSON.stringify(alert) }] });
    alerted.add(key);
    console.log(`ALERT ${blocker.transactionalId} has held ${watchTopic}-${partition} for ${alert.openSeconds} s: ${blockedLag} offsets blocked`);
  }
}

let running = true;
const shutdown = async () => {
  running = false;
  await consumer.disconnect();
  await producer.disconnect();
  await admin.disconnect();
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

console.log(`watching ${watchTopic}: blocked lag >= ${threshold} for >= ${hangMs / 1000} s`);
while (running) {
  await check().catch((err) => console.error(`check failed: ${(err as Error).message}`));
  await new Promise((resolve) => setTimeout(resolve, POLL_MS));
}
