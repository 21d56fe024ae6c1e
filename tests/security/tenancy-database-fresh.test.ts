/**
 * Issue 27, class 2: a database a learner altered is never seen by the next attempt. Attempt A
 * (a Run of db-sink, tests/security/attacks/leave-database-traps.ts) uses every right its
 * DATABASE_URL gives to leave traps behind: an event trigger that plants a row-altering trigger
 * on the lab's table, functions outside the public schema, a role, large objects, settings, a
 * row in the lab's table and a changed table, and the same through template1 and postgres. The
 * next attempt, on the same pool (one database at a time, so it comes right after A), finds none
 * of it in its new database, and the db-sink reference solution's quick grade there passes.
 *
 * Both kinds of database: the embedded one (PGlite, where A is superuser: a new process per
 * attempt from a pristine snapshot) and a real PostgreSQL server (a role and a database per
 * attempt from a pristine template; PUBLIC has no CONNECT on the server's other databases).
 */
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LABS_DIR, ROOT_DIR } from '../../lab-server/core/paths.ts';
import { DatabasePool, type DatabaseLease } from '../../lab-server/db/pool.ts';
import { randomNamespace } from '../../lab-server/kafka/attempt-names.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { createAttempt } from '../../lab-server/runner/attempt.ts';
import { gradeProgram } from '../../lab-server/runner/check-labs.ts';
import { postgresBin, POSTGRES_MISSING, ThrowawayPostgres } from '../support/postgres.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();
const bin = postgresBin();
let server: ThrowawayPostgres | null = null;
const pools: DatabasePool[] = [];

/** What an attempt finds in its database before the lab's schema is applied. */
interface Observed {
  eventTriggers: string[];
  evilObjects: string[];
  largeObjects: number;
  settings: string[];
  tables: string[];
  isolation: string;
  searchPath: string;
}

async function observe(url: string): Promise<Observed> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    const names = async (sql: string) => (await client.query(sql)).rows.map((r: { name: string }) => r.name);
    return {
      eventTriggers: await names('SELECT evtname AS name FROM pg_event_trigger'),
      evilObjects: await names(`
        SELECT proname AS name FROM pg_proc WHERE proname LIKE 'kiq\\_evil%'
        UNION ALL SELECT nspname FROM pg_namespace WHERE nspname LIKE 'kiq\\_evil%'
        UNION ALL SELECT rolname FROM pg_roles WHERE rolname LIKE 'kiq\\_evil%'
        UNION ALL SELECT tgname FROM pg_trigger WHERE tgname LIKE 'kiq\\_evil%'
        UNION ALL SELECT relname FROM pg_class WHERE relname LIKE 'kiq\\_evil%'`),
      largeObjects: (await client.query('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).rows[0].n,
      settings: await names('SELECT array_to_string(setconfig, \',\') AS name FROM pg_db_role_setting'),
      tables: await names("SELECT schemaname || '.' || tablename AS name FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"),
      isolation: (await client.query('SHOW default_transaction_isolation')).rows[0].default_transaction_isolation,
      searchPath: (await client.query('SHOW search_path')).rows[0].search_path,
    };
  } finally {
    await client.end().catch(() => {});
  }
}

/** A pool that looks into every database it hands out, as the attempt's own role, before the attempt uses it. */
class ObservedPool extends DatabasePool {
  readonly observed: Observed[] = [];

  override async acquire(namespace: string, notify?: (line: string) => void): Promise<DatabaseLease> {
    const lease = await super.acquire(namespace, notify);
    this.observed.push(await observe(lease.url));
    return lease;
  }
}

/** Attempt A: the attack as a Run of db-sink on `pool`; its RESULT once it printed it and the Run ended. */
async function attack(pool: DatabasePool): Promise<Record<string, string>> {
  const lab = await loadLab('db-sink');
  const code = fs.readFileSync(path.join(ROOT_DIR, 'tests/security/attacks/leave-database-traps.ts'), 'utf8');
  const lines: string[] = [];
  const listener = { output: (i: string, s: string, l: string) => void lines.push(`${i} ${s} ${l}`), diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };
  const attempt = createAttempt({ lab, program: { kind: 'code', code }, brokers, control: null, namespace: randomNamespace(), mode: 'run', listener, databases: pool });
  const done = attempt.run();
  const deadline = Date.now() + 120_000;
  let result: { steps: Record<string, string> } | null = null;
  while (!result && Date.now() < deadline) {
    const line = lines.find((l) => / stdout RESULT /.test(l));
    if (line) result = JSON.parse(line.slice(line.indexOf('RESULT ') + 7));
    else await new Promise((r) => setTimeout(r, 100));
  }
  attempt.requestStop();
  await done;
  await attempt.deleteTopics();
  if (!result) throw new Error(`the attack printed no RESULT:\n${lines.slice(-30).join('\n')}`);
  return result.steps;
}

/** Attempt B: the reference solution's quick grade, right after A on the same pool. */
async function innocentGrade(pool: ObservedPool) {
  const code = fs.readFileSync(path.join(LABS_DIR, 'db-sink', 'solution.ts'), 'utf8');
  return gradeProgram({ brokers, control: null }, 'db-sink', { kind: 'code', code }, { quick: true, databases: pool });
}

/** What B must find: nothing of A's, the defaults, no table yet. */
function expectPristine(seen: Observed): void {
  expect(seen.eventTriggers).toEqual([]);
  expect(seen.evilObjects).toEqual([]);
  expect(seen.largeObjects).toBe(0);
  expect(seen.settings.filter((s) => s.includes('kiq_evil'))).toEqual([]);
  expect(seen.tables).toEqual([]);
  expect(seen.isolation).toBe('read committed');
  expect(seen.searchPath).not.toContain('kiq_evil');
}

beforeAll(async () => {
  if (!bin) return;
  server = new ThrowawayPostgres(bin);
  await server.start();
}, 60_000);

afterAll(async () => {
  for (const pool of pools) await pool.close().catch(() => {});
  server?.stopNow();
});

describe('a database altered by one attempt', () => {
  it('is never seen by the next: embedded PostgreSQL, where the attempt is superuser', async () => {
    const pool = new ObservedPool({ maxEmbedded: 1 });
    pools.push(pool);
    const steps = await attack(pool);
    // The attack had every right: its traps were all laid in its own database.
    for (const step of ['event-trigger', 'function-other-schema', 'function-pg-catalog', 'role', 'large-object', 'database-setting', 'system-setting', 'lab-table-row', 'lab-table-altered']) {
      expect(steps[step], `${step}: ${steps[step]}`).toBe('ok');
    }
    const report = await innocentGrade(pool);
    expect(pool.observed).toHaveLength(2);
    expectPristine(pool.observed[1]!);
    expect(report.verdict, JSON.stringify(report.checks.filter((c) => !c.passed))).toBe('pass');
  }, 400_000);

  it.runIf(!bin && Boolean(process.env.CI))('has a real PostgreSQL server to run on in CI', () => {
    expect.fail(POSTGRES_MISSING);
  });

  it.skipIf(!bin)('is never seen by the next: a real PostgreSQL server, where the attempt has a role of its own', async () => {
    const pool = new ObservedPool({ url: server!.url });
    pools.push(pool);
    const steps = await attack(pool);
    // Within its own database it may do what an owner does; nothing beyond it.
    for (const step of ['function-other-schema', 'large-object', 'database-setting', 'role-setting', 'lab-table-row', 'lab-table-altered']) {
      expect(steps[step], `${step}: ${steps[step]}`).toBe('ok');
    }
    expect(steps['event-trigger']).toMatch(/permission denied|must be superuser/);
    expect(steps['role']).toMatch(/permission denied|must be superuser/);
    expect(steps['system-setting']).toMatch(/permission denied|must be superuser/);
    for (const database of ['template1', 'postgres']) {
      expect(steps[`${database}-large-object`]).toMatch(/permission denied for database/);
      expect(steps[`${database}-table`]).toMatch(/permission denied for database/);
    }
    const report = await innocentGrade(pool);
    expect(pool.observed).toHaveLength(2);
    expectPristine(pool.observed[1]!);
    expect(report.verdict, JSON.stringify(report.checks.filter((c) => !c.passed))).toBe('pass');

    // Nothing of A's is left on the server either: its database, its role, anything in the shared databases.
    const admin = new pg.Client(server!.url);
    await admin.connect();
    try {
      expect((await admin.query("SELECT datname FROM pg_database WHERE datname LIKE 'kiq\\_kiq%'")).rows).toEqual([]);
      expect((await admin.query("SELECT rolname FROM pg_roles WHERE rolname LIKE 'kiq\\_%'")).rows).toEqual([]);
      expect((await admin.query('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).rows).toEqual([{ n: 0 }]);
    } finally {
      await admin.end();
    }
  }, 400_000);
});
