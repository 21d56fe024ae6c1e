// expect-fail: no-duplicate-effects
// Treats window results like events: every result becomes a new row (no key on the window), so a
// window reported early, updated and final has three rows, and the "total" sums all three.
import { Kafka, type EachBatchPayload } from 'kafkajs';
import pg from 'pg';

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const db = new pg.Client({ connectionString: env('DATABASE_URL') });
// A lost connection cannot be repaired mid-batch: exit, and the supervisor starts us afresh.
db.on('error', (err) => {
  console.error(`database connection lost: ${err.message}`);
  process.exit(1);
});
await db.connect();
// The window is the business key: one row per (campaign, minute), one total per campaign.
await db.query('CREATE UNIQUE INDEX IF NOT EXISTS campaign_totals_key ON campaign_totals (campaign_id)');

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'clicks-downstream', brokers: env('KAFKA_BROKERS').split(','), retry: { retries: 10 } });
// readUncommitted: false is kafkajs's default (isolation level read_committed); spelled out because
// the counts of aborted transactions must never reach the tables. Such a consumer only gets records
// below the last stable offset: while a producer's transaction is open it waits, which is correct.
const consumer = kafka.consumer({ groupId: env('GROUP_ID'), readUncommitted: false });
await consumer.connect();
await consumer.subscribe({ topic: env('CLICKS_TOPIC'), fromBeginning: true });

interface WindowResult {
  campaign_id: string;
  window_start: string;
  window_end: string;
  clicks: number;
}

async function applyBatch({ batch, resolveOffset, heartbeat }: EachBatchPayload) {
  if (batch.messages.length === 0) return;
  // 1. The effect, in one database transaction. Upserting an absolute count is idempotent: if we
  //    die after the COMMIT but before the offset commit, the replayed batch writes the same values
  //    again, in the same order, and ends in the same state.
  const campaigns = new Set<string>();
  await db.query('BEGIN');
  try {
    for (const message of batch.messages) {
      const r = JSON.parse(message.value!.toString()) as WindowResult;
      await db.query(
        'INSERT INTO window_counts (campaign_id, window_start, window_end, clicks) VALUES ($1, $2, $3, $4)',
        [r.campaign_id, r.window_start, r.window_end, r.clicks],
      );
      campaigns.add(r.campaign_id);
    }
    // The totals are derived from the window rows, never incremented: a recomputed sum is right
    // however often a result was applied.
    for (const campaign of campaigns) {
      await db.query(
        `INSERT INTO campaign_totals (campaign_id, total_clicks)
         SELECT campaign_id, sum(clicks) FROM window_counts WHERE campaign_id = $1 GROUP BY campaign_id
         ON CONFLICT (campaign_id) DO UPDATE SET total_clicks = EXCLUDED.total_clicks`,
        [campaign],
      );
    }
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK').catch(() => {});
    throw err; // kafkajs delivers the batch again
  }
  // 2. The progress marker, only once the rows are durable: the next offset to read (last + 1).
  const next = (BigInt(batch.lastOffset()) + 1n).toString();
  await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: next }]);
  resolveOffset(batch.lastOffset());
  await heartbeat();
  console.log(`applied ${batch.messages.length} window results of partition ${batch.partition} up to offset ${batch.lastOffset()}`);
}

await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, eachBatch: applyBatch });

consumer.on(consumer.events.CRASH, ({ payload }) => {
  // kafkajs gives up on errors it cannot retry; exit so the supervisor starts us afresh.
  if (!payload.restart) {
    console.error(`consumer stopped: ${payload.error.message}`);
    process.exit(1);
  }
});

const shutdown = async () => {
  await consumer.disconnect();
  await db.end().catch(() => {});
  process.exit(0);
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
