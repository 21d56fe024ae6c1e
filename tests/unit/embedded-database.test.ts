/**
 * The embedded PostgreSQL (PGlite in a child process, behind our wire queue) and the SQL crash
 * points, against the real thing: a learner-style program bundled with 'pg' runs under Node's
 * permission model, reports its SQL statements, is SIGKILLed mid-transaction at a crash point
 * (its rows vanish), and a restarted program connects at once. Concurrent connections with
 * parameterized and same-named prepared statements do not interfere, not even when one sends an
 * extended-protocol exchange in two pieces. No broker needed.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { labDefinitionSchema, pipelineLabSchema } from '../../src/shared/lab.ts';
import { EmbeddedDatabase } from '../../lab-server/db/embedded.ts';
import { DatabasePool, databaseName, redactUrl } from '../../lab-server/db/pool.ts';
import type { ChildEvent } from '../../lab-server/runner/program/child/protocol.ts';
import { compileProgram } from '../../lab-server/runner/program/compile.ts';
import { ProgramInstance } from '../../lab-server/runner/program/program-instance.ts';

let db: EmbeddedDatabase;
const clients: pg.Client[] = [];
const dirs: string[] = [];

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: db.url });
  client.on('error', () => {});
  await client.connect();
  clients.push(client);
  return client;
}

beforeAll(async () => {
  db = await EmbeddedDatabase.start();
}, 240_000);

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => {});
  await db?.stop();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

/** A program run like a learner's: bundled (pg resolved to our wrapper), permission model, IPC. */
async function startProgram(code: string): Promise<{ instance: ProgramInstance; events: ChildEvent[]; lines: string[] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-dbtest-'));
  dirs.push(dir);
  const compiled = await compileProgram(code, dir);
  const instance = new ProgramInstance('i1', 1, { kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: dir }, { DATABASE_URL: db.url });
  const events: ChildEvent[] = [];
  const lines: string[] = [];
  instance.on('event', (e) => events.push(e));
  instance.on('line', (_stream, line) => lines.push(line));
  return { instance, events, lines };
}

const until = async (what: () => boolean, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!what() && Date.now() < end) await sleep(20);
  return what();
};

describe('embedded database', () => {
  it('lets two connections run parameterized and same-named prepared statements at once', async () => {
    const [a, b, c] = [await connect(), await connect(), await connect()];
    let wrong = 0;
    const work = async (client: pg.Client, who: number) => {
      for (let i = 0; i < 150; i++) {
        // Same statement name on every connection, different text and parameter types.
        const text = who % 2 ? 'SELECT $1::int AS i, $2::text AS who' : 'SELECT $2::text AS who, $1::bigint AS i';
        const { rows } = await client.query({ name: 'same-name', text, values: [i, `c${who}`] });
        if (Number(rows[0].i) !== i || rows[0].who !== `c${who}`) wrong++;
      }
    };
    await Promise.all([work(a, 0), work(b, 1), work(c, 2)]);
    expect(wrong).toBe(0);
  }, 60_000);

  it('keeps an extended-protocol exchange that arrives in two pieces away from other connections', async () => {
    // Connected first: a new connection's startup waits for the backend like any message.
    const other = await connect();
    // A raw client: startup, then Parse + Bind + Execute now and Sync 300 ms later.
    const socket = net.connect(db.port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (d: Buffer) => received.push(d));
    await new Promise((r) => socket.once('connect', r));
    const msg = (type: string, body: Buffer) => {
      const head = Buffer.alloc(5);
      head.write(type, 0, 'latin1');
      head.writeInt32BE(body.length + 4, 1);
      return Buffer.concat([head, body]);
    };
    const cstr = (s: string) => Buffer.from(`${s}\0`);
    const params = Buffer.concat([cstr('user'), cstr('postgres'), cstr('database'), cstr('postgres'), Buffer.from([0])]);
    const startup = Buffer.alloc(8);
    startup.writeInt32BE(8 + params.length, 0);
    startup.writeInt32BE(196608, 4);
    socket.write(Buffer.concat([startup, params]));
    // The database asks for its password (cleartext, loopback only) before PGlite sees the startup.
    await until(() => Buffer.concat(received).includes(Buffer.from('R\0\0\0\x08\0\0\0\x03', 'latin1')));
    socket.write(msg('p', cstr(decodeURIComponent(new URL(db.url).password))));
    await until(() => Buffer.concat(received).includes(Buffer.from('Z\0\0\0\x05I', 'latin1')));
    received.length = 0;
    const int16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
    const int32 = (n: number) => {
      const b = Buffer.alloc(4);
      b.writeInt32BE(n);
      return b;
    };
    const parse = msg('P', Buffer.concat([cstr(''), cstr('SELECT $1::text AS v'), int16(0)]));
    const bind = msg('B', Buffer.concat([cstr(''), cstr(''), int16(0), int16(1), int32(3), Buffer.from('raw'), int16(0)]));
    const execute = msg('E', Buffer.concat([cstr(''), int32(0)]));
    socket.write(Buffer.concat([parse, bind, execute]));
    await sleep(100);
    // Meanwhile another connection runs its own unnamed parameterized statement: it waits.
    let otherDone = false;
    const otherQuery = other.query('SELECT $1::int + 1 AS n', [41]).finally(() => (otherDone = true));
    await sleep(300);
    expect(otherDone).toBe(false);
    socket.write(msg('S', Buffer.alloc(0)));
    const { rows } = await otherQuery;
    expect(rows[0].n).toBe(42);
    await until(() => Buffer.concat(received).includes(Buffer.from('Z\0\0\0\x05I', 'latin1')));
    const answer = Buffer.concat(received);
    expect(answer.includes(Buffer.from('raw'))).toBe(true); // its DataRow
    expect(answer[0]).not.toBe('E'.charCodeAt(0)); // no ErrorResponse first
    expect(answer.includes(Buffer.from('unnamed prepared statement does not exist'))).toBe(false);
    socket.destroy();
  }, 60_000);

  it("reports SQL crash points from a learner's program; a SIGKILL mid-transaction leaves no rows, and a restart connects at once", async () => {
    const admin = await connect();
    await admin.query('CREATE TABLE crash_test (id text PRIMARY KEY, n int)');
    const code = `
      import pg from 'pg';
      const db = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await db.connect();
      const start = Date.now();
      await db.query('SELECT 1');
      console.log('connected in ' + (Date.now() - start) + ' ms');
      await db.query('BEGIN');
      await db.query("INSERT INTO crash_test VALUES ('a', 1) ON CONFLICT (id) DO NOTHING");
      await db.query("UPDATE crash_test SET n = n + 1 WHERE id = 'a'");
      await new Promise((resolve, reject) => db.query('DELETE FROM crash_test WHERE id = $1', ['zz'], (err) => (err ? reject(err) : resolve(null))));
      await db.query('COMMIT');
      console.log('committed');
      await db.end();
    `;
    // First run: killed at the crash point right after the INSERT, inside its transaction.
    const first = await startProgram(code);
    first.instance.send({ t: 'arm', point: 'after:db-write', action: 'kill', occurrence: 1 });
    expect(await until(() => first.events.some((e) => e.t === 'hit'))).toBe(true);
    const hit = first.events.find((e) => e.t === 'hit')!;
    expect(hit).toMatchObject({ point: 'after:db-write', action: 'kill', txnOpen: true });
    first.instance.signal('SIGKILL');
    await first.instance.exited;
    expect((await admin.query('SELECT count(*)::int AS n FROM crash_test')).rows[0].n).toBe(0);

    // Second run: connects at once (the killed one's transaction was rolled back) and commits.
    const second = await startProgram(code);
    const exit = await second.instance.exited;
    expect(second.lines.join('\n'), second.lines.join('\n')).toContain('committed');
    expect(exit.code).toBe(0);
    const ms = Number(/connected in (\d+) ms/.exec(second.lines.join('\n'))?.[1]);
    expect(ms).toBeLessThan(2_000);
    expect((await admin.query('SELECT n FROM crash_test')).rows).toEqual([{ n: 2 }]);
    // Every data-changing statement and the COMMIT were reported, before and after; SELECT/BEGIN were not.
    const points = second.events.filter((e) => e.t === 'call').map((e) => (e as { point: string }).point);
    expect(points).toEqual([
      'before:db-write', 'after:db-write', // INSERT ... ON CONFLICT
      'before:db-write', 'after:db-write', // UPDATE
      'before:db-write', 'after:db-write', // DELETE (callback style)
      'before:db-commit', 'after:db-commit',
    ]);
  }, 120_000);

  it("refuses a connection without the database's own password", async () => {
    const wrong = new URL(db.url);
    wrong.password = 'not-the-password';
    const client = new pg.Client({ connectionString: wrong.toString(), connectionTimeoutMillis: 5_000 });
    client.on('error', () => {});
    await expect(client.connect()).rejects.toThrow(/password authentication failed/);
    // A raw client that answers the password request with a query instead: refused, nothing run.
    const socket = net.connect(db.port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (d: Buffer) => received.push(d));
    await new Promise((r) => socket.once('connect', r));
    const params = Buffer.from('user\0postgres\0database\0postgres\0\0');
    const startup = Buffer.alloc(8);
    startup.writeInt32BE(8 + params.length, 0);
    startup.writeInt32BE(196608, 4);
    socket.write(Buffer.concat([startup, params]));
    const query = Buffer.from('CREATE TABLE intruder (x int)\0');
    const head = Buffer.alloc(5);
    head.write('Q', 0, 'latin1');
    head.writeInt32BE(query.length + 4, 1);
    socket.write(Buffer.concat([head, query]));
    const closed = new Promise((r) => socket.once('close', r));
    expect(await until(() => Buffer.concat(received).includes(Buffer.from('28P01')), 5_000)).toBe(true);
    await closed;
    const admin = await connect();
    expect((await admin.query("SELECT count(*)::int AS n FROM pg_tables WHERE tablename = 'intruder'")).rows[0].n).toBe(0);
  }, 60_000);

  it('hands every attempt a new database: nothing the last one did as superuser is there', async () => {
    const pool = new DatabasePool({ maxEmbedded: 1 });
    try {
      const first = await pool.acquire('kiq-fresh-a');
      const a = new pg.Client({ connectionString: first.url });
      a.on('error', () => {});
      await a.connect();
      // The previous learner is PGlite's superuser: objects no schema drop would remove.
      await a.query('CREATE TABLE leftover (x int)');
      await a.query('CREATE SCHEMA extra');
      await a.query("CREATE FUNCTION pg_catalog.kiq_left() RETURNS int LANGUAGE sql AS 'SELECT 1'");
      await a.query("CREATE FUNCTION public.kiq_trap() RETURNS event_trigger LANGUAGE plpgsql AS 'BEGIN END'");
      await a.query('CREATE EVENT TRIGGER kiq_trap ON ddl_command_end EXECUTE FUNCTION public.kiq_trap()');
      await a.query('CREATE ROLE kiq_left LOGIN');
      await a.query('SELECT lo_create(424242)');
      await a.query("ALTER SYSTEM SET work_mem = '1GB'");
      await a.end();
      const firstPort = new URL(first.url).port;
      await first.release();

      const second = await pool.acquire('kiq-fresh-b');
      expect(new URL(second.url).port).not.toBe(firstPort);
      // The first attempt's process is gone with its data: its address answers no more.
      const old = new pg.Client({ connectionString: first.url, connectionTimeoutMillis: 3_000 });
      old.on('error', () => {});
      await expect(old.connect()).rejects.toThrow();
      const b = new pg.Client({ connectionString: second.url });
      b.on('error', () => {});
      await b.connect();
      try {
        const one = async (sql: string) => (await b.query(sql)).rows[0];
        expect(await one("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname IN ('public', 'extra')")).toEqual({ n: 1 });
        expect(await one("SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'")).toEqual({ n: 0 });
        expect(await one("SELECT count(*)::int AS n FROM pg_proc WHERE proname LIKE 'kiq\\_%'")).toEqual({ n: 0 });
        expect(await one('SELECT count(*)::int AS n FROM pg_event_trigger')).toEqual({ n: 0 });
        expect(await one("SELECT count(*)::int AS n FROM pg_roles WHERE rolname LIKE 'kiq\\_%'")).toEqual({ n: 0 });
        expect(await one('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).toEqual({ n: 0 });
        expect(await one('SHOW work_mem')).toEqual({ work_mem: '4MB' });
      } finally {
        await b.end();
        await second.release();
      }
    } finally {
      await pool.close();
    }
  }, 240_000);
});

describe('database pool and lab format', () => {
  it('names server databases after the namespace and hides passwords', () => {
    expect(databaseName('kiq-check-db-sink-mabc12')).toBe('kiq_kiq_check_db_sink_mabc12');
    expect(databaseName('x'.repeat(100))).toHaveLength(63);
    expect(redactUrl('postgresql://kiq:secret@db:5432/postgres')).toBe('postgresql://kiq:***@db:5432/postgres');
  });

  it('fails with one line naming the fix when DATABASE_URL is wrong or unreachable', async () => {
    expect(() => new DatabasePool({ url: 'mysql://x@y/z' })).toThrow(/DATABASE_URL must start with postgresql:\/\//);
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    const pool = new DatabasePool({ url: `postgresql://kiq:secret@127.0.0.1:${port}/postgres` });
    const err = (await pool.acquire('kiq-x').catch((e: Error) => e)) as Error & { code?: string };
    expect(err.code).toBe('DATABASE_UNAVAILABLE');
    expect(err.message).not.toContain('\n');
    expect(err.message).not.toContain('secret');
    expect(err.message).toMatch(/^DATABASE_URL \(postgresql:\/\/kiq:\*\*\*@127\.0\.0\.1:\d+\/postgres\) is unreachable: .+ Start that PostgreSQL server or fix DATABASE_URL, or unset it/);
    await pool.close();
  });

  it('takes a database block with schema, effects query and effect function', () => {
    const base = {
      title: 'x lab',
      summary: 'writes rows to a database',
      env: [{ name: 'KAFKA_BROKERS', description: 'b' }, { name: 'DATABASE_URL', description: 'd' }],
      topics: [{ name: 'in', env: 'IN_TOPIC', partitions: 1, role: 'input', description: 'i' }],
      seeds: [{ topic: 'in', records: 10 }],
      faults: { full: [{ kind: 'kill', at: ['after:db-write'] }], quick: [{ kind: 'kill', at: ['after:db-commit'] }] },
      checks: ['no-duplicate-effects', 'no-lost-effects'],
    };
    const database = { schema: 'CREATE TABLE t (id text)', effects: 'SELECT id FROM t', effect: () => ({ id: 'a' }) };
    const parsed = pipelineLabSchema.parse({ ...base, database });
    expect(parsed.database?.what).toBe('row');
    expect(labDefinitionSchema.safeParse({ ...base, database: { ...database, extra: 1 } }).success).toBe(false);
    expect(labDefinitionSchema.safeParse({ ...base, database: { ...database, effect: 'not a function' } }).success).toBe(false);
  });
});
