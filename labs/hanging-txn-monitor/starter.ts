// Hanging-transaction monitor (starter). The plumbing is here: a read_uncommitted consumer that
// learns each WATCH_TOPIC partition's high watermark, an admin client, a producer for alerts and a
// check() that runs every second. It never alerts yet: fill in the TODOs.
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
const TXN_LOG = '__transaction_state'; // the transaction coordinator's own log

// ---- reading the coordinator's log ---------------------------------------------------------------
// key:   int16 record type (0 for transaction records) + int16 length + transactional id (UTF-8)
// value: int16 version, then: producerId int64, producerEpoch int16, transactionTimeoutMs int32,
//        state int8 (1 = Ongoing), partitions [{ topic string, partitionIds [int32] }],
//        lastUpdateTimestampMs int64, transactionStartTimestampMs int64
// Version 1 (what Kafka 4 writes) is "flexible": string and array lengths are unsigned varints
// holding length + 1, and each partitions entry and the value end with tagged fields
// (a varint count, then per field: varint tag, varint size, size bytes).
class Cursor {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  int8() { return this.buf.readInt8(this.pos++); }
  int16() { const v = this.buf.readInt16BE(this.pos); this.pos += 2; return v; }
  int32() { const v = this.buf.readInt32BE(this.pos); this.pos += 4; return v; }
  int64() { const v = this.buf.readBigInt64BE(this.pos); this.pos += 8; return v; }
  uvarint() {
    let result = 0;
    for (let shift = 0; ; shift += 7) {
      const byte = this.buf[this.pos++]!;
      result += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) return result;
    }
  }
  text(length: number) { const v = this.buf.toString('utf8', this.pos, this.pos + length); this.pos += length; return v; }
}

interface TxnState {
  transactionalId: string;
  state: number;
  partitions: Map<string, number[]>; // topic -> partitions of the current transaction
  startMs: number;
}

function decodeTransactionalId(key: Buffer): string | null {
  const c = new Cursor(key);
  if (c.int16() !== 0) return null;
  return c.text(c.int16());
}

function decodeState(transactionalId: string, value: Buffer): TxnState {
  const c = new Cursor(value);
  const version = c.int16();
  // TODO: read the fields in order (see the layout above), the flexible way when version >= 1.
  void version;
  return { transactionalId, state: -1, partitions: new Map(), startMs: Date.now() };
}

// ---- what the monitor knows ------------------------------------------------------------------------
const transactions = new Map<string, TxnState>(); // latest state per transactional id
const highWatermarks = new Map<number, number>(); // WATCH_TOPIC partition -> high watermark

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'txn-monitor', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
const admin = kafka.admin();
const producer = kafka.producer();
const consumer = kafka.consumer({ groupId: env('GROUP_ID'), readUncommitted: true });

await admin.connect();
await producer.connect();
await consumer.connect();
// TODO: also follow the coordinator's log (TXN_LOG) with this consumer, and keep `transactions`
// up to date from its records (a null value is a tombstone: the id expired).
await consumer.subscribe({ topics: [watchTopic], fromBeginning: true });
await consumer.run({
  autoCommit: false,
  eachBatch: async ({ batch }) => {
    if (batch.topic === watchTopic) highWatermarks.set(batch.partition, Number(batch.highWatermark));
  },
});

async function check(): Promise<void> {
  for (const [partition, hwm] of highWatermarks) {
    // TODO 1: the last stable offset of this partition (admin.fetchTopicOffsets: which isolation
    //         level does kafkajs use for it?), and blockedLag = hwm - lso.
    // TODO 2: the transaction that holds that LSO: the oldest Ongoing one whose partitions include
    //         this WATCH_TOPIC partition.
    // TODO 3: if blockedLag >= threshold and it has been open for hangMs or more, write ONE alert
    //         to alertsTopic: {"transactionalId","topic","partition","blockedLag"} as JSON.
    void partition;
    void hwm;
  }
  void threshold;
  void hangMs;
  void alertsTopic;
}

let running = true;
process.on('SIGTERM', async () => {
  running = false;
  await consumer.disconnect();
  await producer.disconnect();
  await admin.disconnect();
  process.exit(0);
});

console.log(`watching ${watchTopic}`);
while (running) {
  await check().catch((err) => console.error(`check failed: ${(err as Error).message}`));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
}
