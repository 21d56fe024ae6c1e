// Read committed downstream, first draft: it appends every window result and adds every count to
// the campaign's total. That is right for a stream of click events, but these records are RESULTS:
// the same window comes again with a new count that REPLACES the old one. Your job: keep one row
// per window holding its latest committed count, and totals that stay right under crashes.
import { Kafka } from 'kafkajs';
import pg from 'pg';

const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
await db.connect();
// TODO: give PostgreSQL a key to upsert on: a unique index on window_counts (campaign_id, window_start),
//       and one on campaign_totals (campaign_id).

// Retries, set explicitly: kafkajs 2.2.4 otherwise retries a failed request 5 times, for every
// client, the idempotent producer included. 10 suits production: about two minutes with kafkajs's
// default backoff (300 ms, doubling, at most 30 s apart); this lab shortens only the backoff (see
// its environment panel). An idempotent or transactional producer sets its own
// `retry: { retries: Number.MAX_SAFE_INTEGER }`: a send it gave up on may have been written, and
// its next send would reuse those sequence numbers.
const kafka = new Kafka({ clientId: 'clicks-downstream', brokers: process.env.KAFKA_BROKERS!.split(','), retry: { retries: 10 } });
// TODO: some transactions of the topic were aborted. Which isolation level do you need here?
const consumer = kafka.consumer({ groupId: process.env.GROUP_ID! });
await consumer.connect();
await consumer.subscribe({ topic: process.env.CLICKS_TOPIC!, fromBeginning: true });

await consumer.run({
  autoCommit: false,
  eachMessage: async ({ topic, partition, message }) => {
    const r = JSON.parse(message.value!.toString());

    // TODO: a window result is an absolute value: INSERT ... ON CONFLICT (campaign_id, window_start)
    //       DO UPDATE SET clicks = EXCLUDED.clicks, ... instead of a new row each time.
    await db.query(
      'INSERT INTO window_counts (campaign_id, window_start, window_end, clicks) VALUES ($1, $2, $3, $4)',
      [r.campaign_id, r.window_start, r.window_end, r.clicks],
    );
    // TODO: adding the new count double-counts every window reported twice, and every replay after
    //       a crash. Derive the total from the window rows instead (and do both writes in ONE
    //       database transaction, so a crash cannot leave one without the other).
    const updated = await db.query('UPDATE campaign_totals SET total_clicks = total_clicks + $2 WHERE campaign_id = $1', [r.campaign_id, r.clicks]);
    if (updated.rowCount === 0) {
      await db.query('INSERT INTO campaign_totals (campaign_id, total_clicks) VALUES ($1, $2)', [r.campaign_id, r.clicks]);
    }

    // The progress marker: the offset of the NEXT record to read. Keep it after the database writes.
    await consumer.commitOffsets([{ topic, partition, offset: String(Number(message.offset) + 1) }]);
  },
});

process.on('SIGTERM', async () => {
  await consumer.disconnect();
  await db.end();
  process.exit(0);
});
