// The clicks-per-minute job as the case study found it. It counts clicks per campaign in one-minute
// windows (10 s grace) and keeps its window state in STATE_TOPIC, written in the same transaction
// as its input offsets and restored on startup: that part is sound, leave it as it is.
//
// What is wrong (the symptoms of the case study):
//  - it writes every UPDATE of a window to clicks-per-minute; the lab wants each window once, final;
//  - it POSTs to the ranking API from inside its Kafka transaction, without an Idempotency-Key:
//    every replay after a crash or a failed commit posts again (duplicates after each deploy);
//  - it waits up to 30 s for the API while its transaction is open: a slow API keeps the
//    transaction open past its timeout, the coordinator rolls it back, and the batch is redone.
//
// TODO: emit only final windows; write them to OUTPUT_TOPIC and to OUTBOX_TOPIC in the transaction;
// move the POST to a second stage (its own consumer group on OUTBOX_TOPIC, read_committed) with an
// Idempotency-Key made from the window, a short client timeout, retries with the same key, and its
// offset committed only after the API answered. See the hints.
import { Kafka, type KafkaMessage } from 'kafkajs';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const CLICKS_TOPIC = env('INPUT_TOPIC');
const COUNTS_TOPIC = env('OUTPUT_TOPIC');
const OUTBOX_TOPIC = env('OUTBOX_TOPIC');
const STATE_TOPIC = env('STATE_TOPIC');
const API_URL = env('API_URL');
const GROUP_ID = env('GROUP_ID');

const MINUTE_MS = 60_000;
const GRACE_MS = 10_000;

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'clicks-per-minute', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });

interface Click {
  clickId: string;
  campaignId: string;
  ts: number;
}
interface WindowResult {
  campaignId: string;
  windowStart: number;
  windowEnd: number;
  count: number;
}
/** What the counting stage keeps per input partition (and writes to STATE_TOPIC, key p<partition>). */
interface PartitionState {
  streamTime: number;
  /** `${campaignId}|${windowStart}` -> clicks so far, for windows not final yet. */
  windows: Record<string, number>;
}

const emptyState = (): PartitionState => ({ streamTime: -1, windows: {} });

// ---- stage 1: counting --------------------------------------------------------------------------

/**
 * Adds a batch of clicks to a copy of the state; returns the new state, the current count of every
 * window the batch touched, and the windows now final (removed from the state).
 */
function count(state: PartitionState, messages: KafkaMessage[]): { next: PartitionState; touched: WindowResult[]; final: WindowResult[] } {
  const next: PartitionState = { streamTime: state.streamTime, windows: { ...state.windows } };
  const touchedKeys = new Set<string>();
  for (const m of messages) {
    const click = JSON.parse(m.value!.toString()) as Click;
    const windowStart = Math.floor(click.ts / MINUTE_MS) * MINUTE_MS;
    // Too late: its window was final (and emitted) already. Counting it would change a result
    // that has been published; this input never has such clicks, a real one would log them.
    if (windowStart + MINUTE_MS + GRACE_MS <= next.streamTime) continue;
    const key = `${click.campaignId}|${windowStart}`;
    next.windows[key] = (next.windows[key] ?? 0) + 1;
    touchedKeys.add(key);
    next.streamTime = Math.max(next.streamTime, click.ts);
  }
  const final: WindowResult[] = [];
  for (const [key, clicks] of Object.entries(next.windows)) {
    const [campaignId, start] = key.split('|') as [string, string];
    const windowStart = Number(start);
    if (windowStart + MINUTE_MS + GRACE_MS > next.streamTime) continue;
    final.push({ campaignId, windowStart, windowEnd: windowStart + MINUTE_MS, count: clicks });
    delete next.windows[key];
  }
  final.sort((a, b) => a.windowStart - b.windowStart || a.campaignId.localeCompare(b.campaignId));
  const touched = [...touchedKeys].map((key) => {
    const [campaignId, start] = key.split('|') as [string, string];
    const clicks = next.windows[key] ?? final.find((w) => `${w.campaignId}|${w.windowStart}` === key)!.count;
    return { campaignId, windowStart: Number(start), windowEnd: Number(start) + MINUTE_MS, count: clicks };
  });
  return { next, touched, final };
}

/**
 * Reads the state topic from its start to its end, read_committed. Called after our producer has
 * fenced its predecessor, so no transaction of ours is open and the end is final. kafkajs has no
 * "assign": a short-lived consumer in the restore group the lab grants reads it; END_BATCH_PROCESS also fires
 * for batches of transaction markers only, which eachMessage never sees.
 */
async function restoreState(): Promise<Map<number, PartitionState>> {
  const states = new Map<number, PartitionState>();
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(STATE_TOPIC);
  await admin.disconnect();
  const pending = new Map(ends.filter((e) => Number(e.high) > Number(e.low)).map((e) => [e.partition, Number(e.high)]));
  if (pending.size === 0) return states;
  const groupId = `${GROUP_ID}-restore`; // the lab grants exactly this group; it commits nothing, so each restore starts at the beginning
  const reader = kafka.consumer({ groupId, readUncommitted: false });
  let done!: () => void;
  const reached = new Promise<void>((resolve) => (done = resolve));
  reader.on(reader.events.END_BATCH_PROCESS, ({ payload }) => {
    if (Number(payload.lastOffset) + 1 >= (pending.get(payload.partition) ?? Infinity)) pending.delete(payload.partition);
    if (pending.size === 0) done();
  });
  try {
    await reader.connect();
    await reader.subscribe({ topic: STATE_TOPIC, fromBeginning: true });
    await reader.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        if (message.value) states.set(partition, JSON.parse(message.value.toString()) as PartitionState);
      },
    });
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('restoring the window state timed out')), 20_000).unref());
    await Promise.race([reached, timeout]);
  } finally {
    await reader.disconnect().catch(() => {});
  }
  return states;
}

const producer = kafka.producer({ transactionalId: env('TRANSACTIONAL_ID'), idempotent: true, maxInFlightRequests: 1, retry: { retries: Number.MAX_SAFE_INTEGER } });
await producer.connect();
// InitProducerId: fences the previous incarnation and rolls back its open transaction. Only then
// are the state topic and the committed offsets final.
await (await producer.transaction()).abort();
const states = await restoreState();
console.log(`restored ${states.size} partition states`);

// TODO (the fix): stage 2, the sender, consumes OUTBOX_TOPIC in its own group, e.g. `${GROUP_ID}-sender`.
void OUTBOX_TOPIC;

async function postRanking(w: WindowResult): Promise<void> {
  // TODO: no Idempotency-Key, and 30 s of patience while the transaction stays open.
  const res = await fetch(`${API_URL}/rankings`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(w),
    signal: AbortSignal.timeout(30_000),
  });
  await res.text();
  if (!res.ok) throw new Error(`ranking API answered ${res.status} for ${w.campaignId} ${w.windowStart}`);
}

const counter = kafka.consumer({ groupId: GROUP_ID, readUncommitted: false });
await counter.connect();
await counter.subscribe({ topic: CLICKS_TOPIC, fromBeginning: true });
await counter.run({
  autoCommit: false,
  eachBatch: async ({ batch, heartbeat }) => {
    if (batch.messages.length === 0) return;
    const { partition } = batch;
    const { next, touched } = count(states.get(partition) ?? emptyState(), batch.messages);
    const txn = await producer.transaction();
    try {
      for (const w of touched) {
        // TODO: this call belongs outside the transaction (in the sender), once per final window.
        await postRanking(w);
        // TODO: only final windows belong in clicks-per-minute (and in the outbox).
        await txn.send({ topic: COUNTS_TOPIC, messages: [{ key: `${w.campaignId}|${w.windowStart}`, value: JSON.stringify(w) }] });
      }
      // The window state of input partition p lives on state partition p (sound: keep it).
      await txn.send({ topic: STATE_TOPIC, messages: [{ key: `p${partition}`, value: JSON.stringify(next), partition }] });
      await txn.sendOffsets({
        consumerGroupId: GROUP_ID,
        topics: [{ topic: batch.topic, partitions: [{ partition, offset: String(Number(batch.lastOffset()) + 1) }] }],
      });
      await txn.commit();
    } catch (err) {
      await txn.abort().catch(() => {});
      // Start over from the committed state: exit, and the supervisor restarts us.
      console.error(`counting transaction failed: ${(err as Error).message}; restarting`);
      process.exit(1);
    }
    states.set(partition, next);
    await heartbeat();
  },
});

counter.on(counter.events.CRASH, ({ payload }) => {
  console.error(`consumer stopped: ${payload.error.message}`);
  process.exit(1);
});

const shutdown = async () => {
  await counter.disconnect().catch(() => {});
  await producer.disconnect().catch(() => {});
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
