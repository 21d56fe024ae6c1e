/**
 * The proof that every lab is gradeable: `kafkaiq check` on all of them, on the real broker (and
 * the 3-node cluster for the failover labs), with the full fault plans (kills, a zombie, broker
 * restarts, a killed transaction coordinator). Solutions take the full plan; programs that must fail
 * take the quick plan first (see checkLabs). Each lab is one assertion, so a failure names the lab,
 * the program and what the grader said.
 *
 * The database labs: where PostgreSQL's server binaries are installed (CI installs them), their
 * whole matrix is graded on a throwaway real server, as a lab server given DATABASE_URL would,
 * and each of their solutions once more on the embedded database a learner gets by default. The
 * two share one pool of graders, so the real server's fixtures cost no run of their own.
 * Without the binaries everything runs on the embedded database (and CI fails with the fix).
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ClusterPool } from '../lab-server/broker/cluster-pool.ts';
import { DatabasePool } from '../lab-server/db/pool.ts';
import { listLabIds, loadLab } from '../lab-server/labs/load-lab.ts';
import { labFixtures, runFixtures, type FixtureResult } from '../lab-server/runner/check-labs.ts';
import { postgresBin, POSTGRES_MISSING, ThrowawayPostgres } from './support/postgres.ts';

// KAFKAIQ_LABS=db-sink,outbox narrows the run to some labs (an instructor working on one).
const labs = process.env.KAFKAIQ_LABS ? process.env.KAFKAIQ_LABS.split(',').map((id) => id.trim()).filter(Boolean) : listLabIds();
/** Every lab with a `database` block. */
const databaseLabs = (await Promise.all(labs.map((id) => loadLab(id)))).filter((lab) => lab.definition.database).map((lab) => lab.id);
const EMBEDDED_SOLUTION = 'solution (embedded database)';
const bin = postgresBin();

let clusters: ClusterPool;
let server: ThrowawayPostgres | null = null;
const pools: DatabasePool[] = [];
let results: FixtureResult[] = [];
/** The databases that existed on the real server while the fixtures ran. */
let databasesDuring: string[] = [];

beforeAll(async () => {
  process.env.KAFKA_BROKERS = inject('brokers').join(',');
  // Each lab on the cluster it declares: the 3-node cluster of the failover labs comes from the
  // run's global setup, started on first use.
  clusters = new ClusterPool();
  const log = (line: string) => console.log(line);
  const fixtures = await labFixtures(labs);
  let watcher: pg.Client | null = null;
  let timer: NodeJS.Timeout | undefined;
  const seen = new Set<string>();
  if (bin) {
    server = new ThrowawayPostgres(bin);
    await server.start();
    const onServer = new DatabasePool({ url: server.url, log: (line) => console.log(`[database] ${line}`) });
    const embedded = new DatabasePool({ maxEmbedded: 2, log: (line) => console.log(`[database] ${line}`) });
    pools.push(onServer, embedded);
    for (const fixture of fixtures) if (databaseLabs.includes(fixture.lab)) fixture.databases = onServer;
    for (const solution of fixtures.filter((f) => databaseLabs.includes(f.lab) && f.program === 'solution')) {
      fixtures.push({ ...solution, program: EMBEDDED_SOLUTION, databases: embedded });
    }
    // Which databases exist while the attempts run: one per attempt, named after its namespace.
    watcher = new pg.Client(server.url);
    await watcher.connect();
    const client = watcher;
    timer = setInterval(() => {
      client
        .query("SELECT datname FROM pg_database WHERE datname LIKE 'kiq\\_%'")
        .then(({ rows }) => rows.forEach((r: { datname: string }) => seen.add(r.datname)))
        .catch(() => {});
    }, 500);
  }
  try {
    results = await runFixtures(fixtures, clusters, { parallel: 3, log });
  } finally {
    clearInterval(timer);
    await watcher?.end().catch(() => {});
  }
  databasesDuring = [...seen];
}, 25 * 60_000);

afterAll(async () => {
  for (const pool of pools) await pool.close().catch(() => {});
  await clusters?.close();
  server?.stopNow();
});

describe.each(labs)('lab %s', (lab) => {
  it('passes its solution, fails its starter, and fails each broken variant on its named check', () => {
    const mine = results.filter((r) => r.lab === lab);
    expect(mine.map((r) => r.program)).toEqual(expect.arrayContaining(['solution', 'starter']));
    const wrong = mine.filter((r) => !r.ok).map((r) => `${r.program}: expected ${r.expected}, got ${r.got}`);
    expect(wrong).toEqual([]);
  });
});

describe('the database labs', () => {
  it.runIf(!bin && Boolean(process.env.CI))('have a real PostgreSQL server to run on in CI', () => {
    expect.fail(POSTGRES_MISSING);
  });

  it.skipIf(!bin || databaseLabs.length === 0)('ran on a real PostgreSQL server, each attempt in a database of its own, dropped afterwards', async () => {
    if (!process.env.KAFKAIQ_LABS) expect(databaseLabs).toEqual(expect.arrayContaining(['db-sink', 'outbox', 'read-committed-downstream']));
    const onServer = results.filter((r) => databaseLabs.includes(r.lab) && r.program !== EMBEDDED_SOLUTION);
    expect(databasesDuring.length).toBeGreaterThanOrEqual(Math.min(onServer.length, 3));
    for (const name of databasesDuring) expect(name).toMatch(/^kiq_kiq_check_(db_sink|outbox|read_committed_downstream)_/);
    const client = new pg.Client(server!.url);
    await client.connect();
    try {
      const { rows } = await client.query("SELECT datname FROM pg_database WHERE datname LIKE 'kiq\\_%'");
      expect(rows).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it.skipIf(!bin || databaseLabs.length === 0)('pass their solutions on the embedded database a learner gets by default, too', () => {
    const embedded = results.filter((r) => r.program === EMBEDDED_SOLUTION);
    expect(embedded.map((r) => r.lab).sort()).toEqual([...databaseLabs].sort());
    expect(embedded.filter((r) => !r.ok).map((r) => `${r.lab}: ${r.got}`)).toEqual([]);
  });
});
