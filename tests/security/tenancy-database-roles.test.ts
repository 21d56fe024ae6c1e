/**
 * A lab server given DATABASE_URL (a real PostgreSQL server) gives each attempt a database and a
 * role of its own. The URL a program gets logs in as that role: it reaches its own database only,
 * and cannot create databases or roles, nor read or drop another attempt's tables.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabasePool, type DatabaseLease } from '../../lab-server/db/pool.ts';
import { postgresBin, POSTGRES_MISSING, ThrowawayPostgres } from '../support/postgres.ts';

const bin = postgresBin();
let server: ThrowawayPostgres | null = null;
let pool: DatabasePool | null = null;
const leases: DatabaseLease[] = [];

/** Runs one statement as the lease's role, connected to `database` (default: its own). */
async function asRole(lease: DatabaseLease, sql: string, database?: string): Promise<{ ok: true; rows: unknown[] } | { ok: false; error: string }> {
  const url = new URL(lease.url);
  if (database) url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: 5_000 });
  client.on('error', () => {}); // a refused login ends the connection; connect() reports it
  try {
    await client.connect();
    const { rows } = await client.query(sql);
    return { ok: true, rows };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  } finally {
    await client.end().catch(() => {});
  }
}

const databaseOf = (lease: DatabaseLease) => new URL(lease.url).pathname.slice(1);

beforeAll(async () => {
  if (!bin) return;
  server = new ThrowawayPostgres(bin);
  await server.start();
  pool = new DatabasePool({ url: server.url });
  leases.push(await pool.acquire('kiq-roles-a'), await pool.acquire('kiq-roles-b'));
}, 60_000);

afterAll(async () => {
  for (const lease of leases) await lease.release().catch(() => {});
  await pool?.close();
  server?.stopNow();
});

describe('per-attempt PostgreSQL roles', () => {
  it.runIf(!bin && Boolean(process.env.CI))('have a real PostgreSQL server to run on in CI', () => {
    expect.fail(POSTGRES_MISSING);
  });

  it.skipIf(!bin)('let an attempt use its own database and nothing else', async () => {
    const [a, b] = leases as [DatabaseLease, DatabaseLease];
    // Never the server URL's user: a role named after the attempt's database, with a password.
    expect(new URL(a.url).username).toBe(databaseOf(a));
    expect(new URL(a.url).password.length).toBeGreaterThanOrEqual(24);
    expect(await asRole(b, 'CREATE TABLE effects (id text PRIMARY KEY)')).toMatchObject({ ok: true });
    expect(await asRole(a, 'CREATE TABLE mine (id int)')).toMatchObject({ ok: true });

    // Another attempt's database: no connection at all (PUBLIC has no CONNECT on it).
    const intoB = await asRole(a, 'SELECT 1', databaseOf(b));
    expect(intoB).toMatchObject({ ok: false });
    expect((intoB as { error: string }).error).toMatch(/permission denied for database/);
    // Nor the server's own databases (PUBLIC lost CONNECT there), where whatever it left behind
    // (a large object in template1, say) would outlive it or reach the next attempt's database.
    for (const other of ['postgres', 'template1']) {
      expect(await asRole(a, 'SELECT 1', other)).toMatchObject({ ok: false, error: expect.stringMatching(/permission denied for database/) });
    }
    // Nor through the server's own database, nor by making more of itself.
    expect(await asRole(a, 'CREATE DATABASE escape')).toMatchObject({ ok: false, error: expect.stringMatching(/permission denied to create database/) });
    expect(await asRole(a, 'CREATE ROLE escape LOGIN')).toMatchObject({ ok: false, error: expect.stringMatching(/permission denied to create role/) });
    expect(await asRole(a, `DROP DATABASE ${databaseOf(b)}`)).toMatchObject({ ok: false, error: expect.stringMatching(/must be owner of database/) });
    expect(await asRole(a, 'SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls FROM pg_roles WHERE rolname = current_user')).toEqual({
      ok: true,
      rows: [{ rolsuper: false, rolcreatedb: false, rolcreaterole: false, rolreplication: false, rolbypassrls: false }],
    });
    // The pool's pristine template, which every attempt's database is copied from, accepts no connection at all.
    const template = await asRole(a, "SELECT datname, datallowconn FROM pg_database WHERE datname LIKE 'kafkaiq\\_pristine\\_%'");
    expect(template).toMatchObject({ ok: true, rows: [{ datallowconn: false }] });
    // B's table is untouched.
    expect(await asRole(b, "SELECT count(*)::int AS n FROM information_schema.tables WHERE table_name = 'effects'")).toEqual({ ok: true, rows: [{ n: 1 }] });
  });

  it.skipIf(!bin)('drops the database and the role when the attempt ends', async () => {
    const lease = await pool!.acquire('kiq-roles-c');
    const name = databaseOf(lease);
    await lease.release();
    const admin = new pg.Client(server!.url);
    await admin.connect();
    try {
      expect((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rows).toEqual([]);
      expect((await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [name])).rows).toEqual([]);
    } finally {
      await admin.end();
    }
    expect(await asRole(lease, 'SELECT 1')).toMatchObject({ ok: false });
  });
});
