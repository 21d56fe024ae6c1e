/**
 * npm run bench:db — what the embedded database (PGlite in a child process, the default when no
 * DATABASE_URL is set) costs: start-up time to the first answered query, resident memory right
 * after the start and after a small workload, and the reset between two attempts. Runs a few
 * databases one after another (never two at once, so the figures are not shared). Prints figures;
 * asserts nothing. The load average is printed too: on a busy machine every figure grows.
 */
import os from 'node:os';
import pg from 'pg';
import { EmbeddedDatabase } from '../lab-server/db/embedded.ts';

const runs = Number(process.env.BENCH_DB_RUNS ?? 3);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const starts: number[] = [];
const rssStart: number[] = [];
const rssLoaded: number[] = [];
const resets: number[] = [];
for (let i = 0; i < runs; i++) {
  const load = os.loadavg()[0]!.toFixed(1);
  let started = Date.now();
  const db = await EmbeddedDatabase.start();
  const client = new pg.Client(db.url);
  client.on('error', () => {});
  await client.connect();
  await client.query('SELECT 1');
  const startMs = Date.now() - started;
  starts.push(startMs);
  rssStart.push(db.rssMb);
  // A lab-sized workload: a table, 1,000 rows inserted one by one in 20 transactions, a read.
  await client.query('CREATE TABLE orders (order_id text PRIMARY KEY, customer text, amount_cents bigint)');
  for (let t = 0; t < 20; t++) {
    await client.query('BEGIN');
    for (let r = 0; r < 50; r++) {
      await client.query('INSERT INTO orders VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [`ord-${t}-${r}`, `k${r % 12}`, 100 * r]);
    }
    await client.query('COMMIT');
  }
  await client.query('SELECT count(*) FROM orders');
  const loaded = (await db.currentRssMb()) ?? 0;
  rssLoaded.push(loaded);
  started = Date.now();
  await db.reset();
  const resetMs = Date.now() - started;
  resets.push(resetMs);
  await client.end().catch(() => {});
  await db.stop();
  console.log(
    `run ${i + 1}: start to first query ${seconds(startMs)} (PGlite itself ${seconds(db.startMs)}), RSS ${db.rssMb} MB after start, ${loaded} MB after 1,000 inserts, reset ${resetMs} ms  [load average ${load}, ${os.cpus().length} cores]`,
  );
}
console.log(
  `embedded database: start median ${seconds(median(starts))} (worst ${seconds(Math.max(...starts))}), RSS median ${median(rssStart)} MB after start, ${median(rssLoaded)} MB after a workload, reset median ${median(resets)} ms`,
);
