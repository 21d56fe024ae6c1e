// expect-fail: transform-correct
// Counts exactly once, but keys each window result by its campaign alone ("so one campaign's
// windows stay together"), where the contract keys clicks-per-minute by campaign AND window start:
// every record sits under the wrong key, and a compacted topic would keep only the last window.
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
const SENDER_GROUP_ID = `${GROUP_ID}-sender`;

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

/** Adds a batch of clicks to a copy of the state; returns the new state and the windows now final. */
function count(state: PartitionState, messages: KafkaMessage[]): { next: PartitionState; final: WindowResult[] } {
  const next: PartitionState = { streamTime: state.streamTime, windows: { ...state.windows } };
  for (const m of messages) {
    const click = JSON.parse(m.value!.toString()) as Click;
    const windowStart = Math.floor(click.ts / MINUTE_MS) * MINUTE_MS;
    // Too late: its window was final (and emitted) already. Counting it would change a result
    // that has been published; this input never has such clicks, a real one would log them.
    if (windowStart + MINUTE_MS + GRACE_MS <= next.streamTime) continue;
    const key = `${click.campaignId}|${windowStart}`;
    next.windows[key] = (next.windows[key] ?? 0) + 1;
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
  return { next, final };
}

/**
 * Reads the state topic from its start to its end, read_committed. Called after our producer has
 * fenced its predecessor, so no transaction of ours is open and the end is final. kafkajs has no
 * "assign": a short-lived consumer with a throwaway group reads it; END_BATCH_PROCESS also fires
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

const counter = kafka.consumer({ groupId: GROUP_ID, readUncommitted: false });
await counter.connect();
await counter.subscribe({ topic: CLICKS_TOPIC, fromBeginning: true });
await counter.run({
  autoCommit: false,
  eachBatch: async ({ batch, heartbeat }) => {
    if (batch.messages.length === 0) return;
    const { partition } = batch;
    const { next, final } = count(states.get(partition) ?? emptyState(), batch.messages);
    const results = final.map((w) => ({ key: w.campaignId, value: JSON.stringify(w) }));
    const txn = await producer.transaction();
    try {
      if (results.length) {
        await txn.send({ topic: COUNTS_TOPIC, messages: results });
        await txn.send({ topic: OUTBOX_TOPIC, messages: results });
      }
      // The state of input partition p lives on state partition p, one record per input partition.
      await txn.send({ topic: STATE_TOPIC, messages: [{ key: `p${partition}`, value: JSON.stringify(next), partition }] });
      await txn.sendOffsets({
        consumerGroupId: GROUP_ID,
        topics: [{ topic: batch.topic, partitions: [{ partition, offset: String(Number(batch.lastOffset()) + 1) }] }],
      });
      await txn.commit();
    } catch (err) {
      await txn.abort().catch(() => {});
      // The in-memory state may be ahead of or behind what is committed. Start over from the
      // committed state: exit, and the supervisor restarts us (fencing, restore, committed offsets).
      console.error(`counting transaction failed: ${(err as Error).message}; restarting`);
      process.exit(1);
    }
    states.set(partition, next);
    if (results.length) console.log(`partition ${partition}: ${results.length} final windows (${results.map((r) => r.key).join(', ')})`);
    await heartbeat();
  },
});

// ---- stage 2: the sender ------------------------------------------------------------------------

// One attempt may take ATTEMPT_TIMEOUT_MS: far below the session timeout (heartbeats go out between
// attempts) and unrelated to any transaction, since the sender has none.
const ATTEMPT_TIMEOUT_MS = 1_000;
const MAX_ATTEMPTS = 40;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function postRanking(w: WindowResult, heartbeat: () => Promise<void>): Promise<void> {
  // The window names the result: the same key on every attempt and after every restart.
  const key = `${w.campaignId}|${w.windowStart}|${w.windowEnd}`;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let status = 0;
    try {
      const res = await fetch(`${API_URL}/rankings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify(w),
        signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
      });
      status = res.status;
      await res.text();
      if (res.ok) return; // applied now, or the stored answer of an earlier attempt
    } catch {
      // Timed out or connection lost: maybe applied, maybe not. The key makes a retry safe.
    }
    // 409: our earlier attempt is still in progress; 429 / 5xx: later. Other 4xx never get better.
    if (status >= 400 && status < 500 && status !== 409 && status !== 429) throw new Error(`ranking API rejected ${key} with ${status}`);
    await sleep(Math.min(1_000, 50 * 2 ** attempt) * (0.5 + Math.random() / 2));
    await heartbeat();
  }
  throw new Error(`ranking API unavailable for ${key}`);
}

const sender = kafka.consumer({ groupId: SENDER_GROUP_ID, readUncommitted: false });
await sender.connect();
await sender.subscribe({ topic: OUTBOX_TOPIC, fromBeginning: true });
await sender.run({
  autoCommit: false,
  eachMessage: async ({ topic, partition, message, heartbeat }) => {
    try {
      await postRanking(JSON.parse(message.value!.toString()) as WindowResult, heartbeat);
    } catch (err) {
      console.error(`${(err as Error).message}; restarting`);
      process.exit(1); // the offset is not committed: the restart posts it again, same key
    }
    // After the API answered: a crash before this line repeats the POST, which the key absorbs.
    await sender.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
  },
});

for (const consumer of [counter, sender]) {
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    console.error(`consumer stopped: ${payload.error.message}`);
    process.exit(1);
  });
}

const shutdown = async () => {
  await Promise.all([counter.disconnect(), sender.disconnect()]).catch(() => {});
  await producer.disconnect().catch(() => {});
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
