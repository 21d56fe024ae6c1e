/**
 * npm run bench:db — what the embedded database (PGlite in a child process, the default when no
 * DATABASE_URL is set) costs per attempt. Every attempt gets a new process (pool.ts): the pool's
 * first runs initdb and dumps the pristine data directory, every later one is restored from that
 * snapshot. Measured: start to the first answered query and resident memory, for an initdb start
 * and for a restore, memory after a small workload; then through the pool, how long an attempt
 * waits for its database when one was started ahead (release of the last, acquire of the next).
 * Runs one database at a time (the spare aside), so the figures are not shared. Prints figures;
 * asserts nothing. The load average is printed too: on a busy machine every figure grows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { EmbeddedDatabase } from '../lab-server/db/embedded.ts';
import { DatabasePool } from '../lab-server/db/pool.ts';

const runs = Number(process.env.BENCH_DB_RUNS ?? 3);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const cpu = (ms: number) => `${(ms / 1000).toFixed(2)} core-s`;
const load = () => `[load average ${os.loadavg()[0]!.toFixed(1)}, ${os.cpus().length} cores]`;

/** Starts one database, times it to the first answered query, runs a lab-sized workload, stops it. */
async function measure(start: () => Promise<EmbeddedDatabase>): Promise<{ db: EmbeddedDatabase; startMs: number; loadedMb: number; workCpuMs: number }> {
  const started = Date.now();
  const db = await start();
  const client = new pg.Client(db.url);
  client.on('error', () => {});
  await client.connect();
  await client.query('SELECT 1');
  const startMs = Date.now() - started;
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
  const stats = await db.currentStats();
  await client.end().catch(() => {});
  await db.stop();
  return { db, startMs, loadedMb: stats?.rssMb ?? 0, workCpuMs: stats ? stats.cpuMs - db.startCpuMs : 0 };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-bench-db-'));
try {
  // 1. initdb, as the pool's first database does (and as every attempt's did before snapshots).
  const fresh = await measure(() => EmbeddedDatabase.start({ makeSnapshot: path.join(dir, 'pristine.tar') }));
  const snapshot = fresh.db.snapshot!;
  console.log(
    `initdb start: to first query ${seconds(fresh.startMs)} (PGlite itself ${seconds(fresh.db.startMs)}), RSS ${fresh.db.rssMb} MB after start, ${fresh.loadedMb} MB after 1,000 inserts; CPU ${cpu(fresh.db.startCpuMs)} to ready, ${cpu(fresh.workCpuMs)} for the inserts; snapshot ${(fs.statSync(snapshot.file).size / 1e6).toFixed(0)} MB  ${load()}`,
  );

  // 2. Restores from the snapshot: every attempt's database after the first.
  const starts: number[] = [];
  const rssStart: number[] = [];
  const rssLoaded: number[] = [];
  const startCpu: number[] = [];
  const workCpu: number[] = [];
  for (let i = 0; i < runs; i++) {
    const run = await measure(() => EmbeddedDatabase.start({ snapshot }));
    starts.push(run.startMs);
    rssStart.push(run.db.rssMb);
    rssLoaded.push(run.loadedMb);
    startCpu.push(run.db.startCpuMs);
    workCpu.push(run.workCpuMs);
    console.log(
      `restore ${i + 1}: to first query ${seconds(run.startMs)} (PGlite itself ${seconds(run.db.startMs)}), RSS ${run.db.rssMb} MB after start, ${run.loadedMb} MB after 1,000 inserts; CPU ${cpu(run.db.startCpuMs)} to ready, ${cpu(run.workCpuMs)} for the inserts  ${load()}`,
    );
  }

  // 3. Through the pool: an attempt's wait for its database when the next one was started ahead.
  const pool = new DatabasePool({ maxEmbedded: 1 });
  const waits: number[] = [];
  try {
    let lease = await pool.acquire('kiq-bench-0');
    for (let i = 1; i <= runs; i++) {
      // Give the spare time to start, as the previous attempt's grade would.
      await new Promise((r) => setTimeout(r, 15_000));
      const started = Date.now();
      await lease.release();
      lease = await pool.acquire(`kiq-bench-${i}`);
      waits.push(Date.now() - started);
    }
    await lease.release();
  } finally {
    await pool.close();
  }
  console.log(`pool: release + next attempt's acquire with one started ahead: ${waits.map((w) => `${w} ms`).join(', ')}`);

  console.log(
    `embedded database per attempt: initdb start ${seconds(fresh.startMs)} / ${fresh.db.rssMb} MB (the pool's first only); restore from the pristine snapshot median ${seconds(median(starts))} (worst ${seconds(Math.max(...starts))}), RSS median ${median(rssStart)} MB after start, ${median(rssLoaded)} MB after a workload, CPU median ${cpu(median(startCpu))} to ready and ${cpu(median(workCpu))} for the workload; an attempt's wait with one started ahead median ${median(waits)} ms`,
  );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
