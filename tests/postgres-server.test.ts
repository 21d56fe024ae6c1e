/**
 * The database labs against a real PostgreSQL server instead of the embedded one: a throwaway
 * server from Debian's binaries (/usr/lib/postgresql/<version>/bin: initdb into a temp dir,
 * pg_ctl start on a free port), the lab server's database pool pointed at it through
 * DATABASE_URL, and the whole fixture matrix of every lab with a database graded on it (a
 * database per attempt, created and dropped on that server). The server is stopped afterwards, also when a test fails.
 *
 * In CI (CI set) missing binaries fail the test with the fix; elsewhere the file is skipped.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ClusterPool } from '../lab-server/broker/cluster-pool.ts';
import { closeDatabasePool, databasePool } from '../lab-server/db/pool.ts';
import { listLabIds, loadLab } from '../lab-server/labs/load-lab.ts';
import { checkLabs, type FixtureResult } from '../lab-server/runner/check-labs.ts';

const MISSING = "PostgreSQL's server binaries are missing (/usr/lib/postgresql/<version>/bin/initdb): install Debian's package with 'apt-get install postgresql' (.ci/run does).";

/** The newest /usr/lib/postgresql/<version>/bin with initdb and pg_ctl, or null. */
function postgresBin(): string | null {
  const root = '/usr/lib/postgresql';
  if (!fs.existsSync(root)) return null;
  const versions = fs.readdirSync(root).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    const bin = path.join(root, v, 'bin');
    if (fs.existsSync(path.join(bin, 'initdb')) && fs.existsSync(path.join(bin, 'pg_ctl'))) return bin;
  }
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/**
 * A throwaway PostgreSQL: initdb (trust authentication, superuser "postgres") into a temp dir,
 * started with pg_ctl on a free port and a socket dir of its own. PostgreSQL refuses to run as
 * root: as root, every command runs as the "postgres" user (the Debian package creates it).
 */
class ThrowawayPostgres {
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-pg-'));
  port = 0;
  private started = false;

  constructor(private readonly bin: string) {}

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private run(tool: string, args: string[]): string {
    const asRoot = process.getuid?.() === 0;
    const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path.join(this.bin, tool), ...args]] : [path.join(this.bin, tool), args];
    const result = spawnSync(cmd, argv, { encoding: 'utf8', cwd: this.dir });
    if (result.status !== 0) throw new Error(`${tool} failed (${result.status}): ${(result.stderr || result.stdout).trim().split('\n').slice(-3).join(' ')}`);
    return result.stdout;
  }

  async start(): Promise<void> {
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
      fs.chownSync(this.dir, uid, gid);
    }
    this.port = await freePort();
    const data = path.join(this.dir, 'data');
    this.run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c max_connections=50`;
    this.run('pg_ctl', ['-D', data, '-o', options, '-l', path.join(this.dir, 'server.log'), '-w', '-t', '60', 'start']);
    this.started = true;
    // Whatever happens to this test process, the server does not outlive it.
    process.once('exit', () => this.stopNow());
  }

  stopNow(): void {
    if (!this.started) return;
    this.started = false;
    try {
      this.run('pg_ctl', ['-D', path.join(this.dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    } catch {
      // Already gone.
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

const bin = postgresBin();
/** Every lab with a `database` block: the embedded database grades them in labs.test.ts, this server here. */
const DATABASE_LABS = (await Promise.all(listLabIds().map((id) => loadLab(id)))).filter((lab) => lab.definition.database).map((lab) => lab.id);

describe.runIf(!bin && Boolean(process.env.CI))('real PostgreSQL server (CI)', () => {
  it('has the PostgreSQL binaries', () => {
    expect.fail(MISSING);
  });
});

describe.skipIf(!bin)('the database labs on a real PostgreSQL server', () => {
  let server: ThrowawayPostgres;
  let clusters: ClusterPool;
  let results: FixtureResult[] = [];
  let databasesDuring: string[] = [];

  beforeAll(async () => {
    server = new ThrowawayPostgres(bin!);
    await server.start();
    process.env.KAFKA_BROKERS = inject('brokers').join(',');
    // The lab server's database: this server, as DATABASE_URL would give it.
    process.env.DATABASE_URL = server.url;
    await closeDatabasePool();
    expect(databasePool().kind).toBe('server');
    clusters = new ClusterPool();
    // Which databases exist while the attempts run: one per attempt, named after its namespace.
    const watcher = new pg.Client(server.url);
    await watcher.connect();
    const seen = new Set<string>();
    const timer = setInterval(() => {
      watcher
        .query("SELECT datname FROM pg_database WHERE datname LIKE 'kiq\\_%'")
        .then(({ rows }) => rows.forEach((r: { datname: string }) => seen.add(r.datname)))
        .catch(() => {});
    }, 500);
    try {
      results = await checkLabs(DATABASE_LABS, clusters, { parallel: 3, log: (line) => console.log(line) });
    } finally {
      clearInterval(timer);
      await watcher.end().catch(() => {});
    }
    databasesDuring = [...seen];
  }, 15 * 60_000);

  afterAll(async () => {
    delete process.env.DATABASE_URL;
    await closeDatabasePool();
    await clusters?.close();
    server?.stopNow();
  });

  it('grades every fixture of every database lab as declared', () => {
    expect(DATABASE_LABS).toEqual(expect.arrayContaining(['db-sink', 'outbox', 'read-committed-downstream']));
    for (const lab of DATABASE_LABS) expect(results.filter((r) => r.lab === lab).map((r) => r.program)).toEqual(expect.arrayContaining(['solution', 'starter']));
    const wrong = results.filter((r) => !r.ok).map((r) => `${r.program}: expected ${r.expected}, got ${r.got}`);
    expect(wrong).toEqual([]);
  });

  it('gave each attempt a database of its own and dropped it afterwards', async () => {
    expect(databasesDuring.length).toBeGreaterThanOrEqual(2);
    for (const name of databasesDuring) expect(name).toMatch(/^kiq_kiq_check_(db_sink|outbox|read_committed_downstream)_/);
    const client = new pg.Client(server.url);
    await client.connect();
    try {
      const { rows } = await client.query("SELECT datname FROM pg_database WHERE datname LIKE 'kiq\\_%'");
      expect(rows).toEqual([]);
    } finally {
      await client.end();
    }
  });
});
