/**
 * Where a lab attempt gets its database. Every grade or run of a lab with a `database` block gets
 * one of its own, empty but for the lab's schema:
 *
 *  - embedded (the default, nothing to install): an embedded PostgreSQL (PGlite, embedded.ts) per
 *    attempt that runs at the same time, each in a child process. A finished attempt's database is
 *    reset (every schema dropped) and handed to the next one. At most `maxEmbedded` run at once
 *    (KAFKAIQ_EMBEDDED_DATABASES, default 2: each takes a few hundred MB); beyond that an attempt
 *    waits, and says so.
 *  - a real PostgreSQL server, when the lab server is given DATABASE_URL: CREATE DATABASE
 *    kiq_<namespace> per attempt, dropped when the attempt ends. The URL's user must be allowed
 *    to create databases.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { KafkaIqError, describeError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import { EmbeddedDatabase } from './embedded.ts';

export interface DatabaseLease {
  /** Connection string of the attempt's own database: the program's DATABASE_URL, and the grader's. */
  url: string;
  /** One line for the learner: which database this is. */
  description: string;
  /** Gives the database back (reset or dropped). Every connection to it must be closed by then. */
  release(): Promise<void>;
}

export interface DatabasePoolOptions {
  /** A PostgreSQL server (postgres://user:password@host:port/db); unset: embedded databases. */
  url?: string;
  /** Embedded databases running at once (default 2). */
  maxEmbedded?: number;
  /** An embedded database idle this long is stopped (default 10 min). */
  idleMs?: number;
  log?: (line: string) => void;
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

/** kiq_<namespace>, as a PostgreSQL identifier: lower case, [a-z0-9_], at most 63 bytes. */
export function databaseName(namespace: string): string {
  return `kiq_${namespace.toLowerCase().replace(/[^a-z0-9_]/g, '_')}`.slice(0, 63);
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

export class DatabasePool {
  readonly kind: 'embedded' | 'server';
  private readonly serverUrl: URL | null;
  private readonly maxEmbedded: number;
  private readonly idleMs: number;
  private readonly log: (line: string) => void;
  /** Embedded databases: started (or starting), and the idle ones ready for the next attempt. */
  private embeddedCount = 0;
  private readonly idle: { db: EmbeddedDatabase; timer: NodeJS.Timeout }[] = [];
  private readonly all = new Set<EmbeddedDatabase>();
  private readonly waiters: { resolve: (db: EmbeddedDatabase) => void; reject: (err: unknown) => void }[] = [];
  private closed = false;

  constructor(options: DatabasePoolOptions = {}) {
    this.log = options.log ?? (() => {});
    this.maxEmbedded = Math.max(1, options.maxEmbedded ?? 2);
    this.idleMs = options.idleMs ?? 10 * 60_000;
    if (options.url) {
      let url: URL;
      try {
        url = new URL(options.url);
      } catch {
        throw new KafkaIqError('INVALID_INPUT', 'DATABASE_URL is not a URL: use postgresql://user:password@host:5432/postgres, or unset it to use the embedded database.');
      }
      if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
        throw new KafkaIqError('INVALID_INPUT', `DATABASE_URL must start with postgresql:// (got ${url.protocol}//): e.g. postgresql://user:password@host:5432/postgres, or unset it.`);
      }
      this.serverUrl = url;
      this.kind = 'server';
    } else {
      this.serverUrl = null;
      this.kind = 'embedded';
    }
  }

  /** A database of its own for one attempt. `notify` gets a line when the attempt has to wait. */
  async acquire(namespace: string, notify: (line: string) => void = () => {}): Promise<DatabaseLease> {
    if (this.closed) throw new KafkaIqError('INTERNAL', 'The database pool is closed.');
    return this.serverUrl ? this.createServerDatabase(namespace) : this.leaseEmbedded(notify);
  }

  /** Fails with a one-line error naming the fix when the database cannot be used (before a check run). */
  async verify(): Promise<void> {
    if (this.serverUrl) await this.withServer(async () => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) waiter.reject(new KafkaIqError('INTERNAL', 'The database pool closed.'));
    for (const { timer } of this.idle.splice(0)) clearTimeout(timer);
    await Promise.all([...this.all].map((db) => db.stop()));
    this.all.clear();
    this.embeddedCount = 0;
  }

  // ---- a real PostgreSQL server ---------------------------------------------------------------

  /** Runs `task` on a connection of DATABASE_URL's user, always ended after; a server that does not answer is a DATABASE_UNAVAILABLE. */
  private async withServer<T>(task: (admin: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: this.serverUrl!.toString(), connectionTimeoutMillis: 10_000 });
    // A connection lost mid-task fails the task's query, which reports it.
    client.on('error', () => {});
    try {
      try {
        await client.connect();
      } catch (err) {
        throw new KafkaIqError(
        'DATABASE_UNAVAILABLE',
          `DATABASE_URL (${redactUrl(this.serverUrl!.toString())}) is unreachable: ${describeError(err) || (err as { code?: string }).code}. Start that PostgreSQL server or fix DATABASE_URL, or unset it to use the embedded database.`,
          { cause: err },
        );
      }
      return await task(client);
    } finally {
      await bestEffort('close a connection to DATABASE_URL', () => client.end(), this.log);
    }
  }

  /**
   * A database and a role of the attempt's own: the program's DATABASE_URL logs in as that role
   * (owner of its database only, no CREATEDB/CREATEROLE, a random password), never as the server
   * URL's user, and PUBLIC loses CONNECT on the database, so no other attempt's role gets in.
   */
  private async createServerDatabase(namespace: string): Promise<DatabaseLease> {
    const name = databaseName(namespace);
    const role = name;
    const password = randomBytes(24).toString('base64url'); // [A-Za-z0-9_-]: safe inside quotes
    await this.withServer(async (admin) => {
      try {
        // A server that crashed mid-attempt may have left one with this name behind. A drop that
        // fails leaves it there, and the CREATE below then says why.
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`).catch(() => {});
        await admin.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`).catch(() => {});
        await admin.query(`CREATE ROLE ${quoteIdent(role)} LOGIN PASSWORD '${password}' NOSUPERUSER NOCREATEDB NOCREATEROLE CONNECTION LIMIT 32`);
        await admin.query(`CREATE DATABASE ${quoteIdent(name)} OWNER ${quoteIdent(role)}`);
        await admin.query(`REVOKE ALL ON DATABASE ${quoteIdent(name)} FROM PUBLIC`);
      } catch (err) {
        throw new KafkaIqError(
          'DATABASE_UNAVAILABLE',
          `Could not create database ${name} on DATABASE_URL (${redactUrl(this.serverUrl!.toString())}): ${describeError(err)}. Its user needs the CREATEDB and CREATEROLE privileges.`,
          { cause: err },
        );
      }
    });
    const url = new URL(this.serverUrl!.toString());
    url.pathname = `/${name}`;
    url.username = role;
    url.password = password;
    return {
      url: url.toString(),
      description: `database ${name} on ${url.host} (DATABASE_URL), created for this attempt with a role of its own`,
      release: () => this.dropServerDatabase(name, role),
    };
  }

  private async dropServerDatabase(name: string, role: string): Promise<void> {
    const drop = this.withServer(async (admin) => {
      // WITH (FORCE) (PostgreSQL 13+) ends connections a program left open.
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`).catch(async () => {
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)}`);
      });
      await admin.query(`DROP ROLE IF EXISTS ${quoteIdent(role)}`);
    });
    await bestEffort(`drop database ${name}`, drop, this.log);
  }

  // ---- embedded databases ---------------------------------------------------------------------

  private async leaseEmbedded(notify: (line: string) => void): Promise<DatabaseLease> {
    const db = await this.takeEmbedded(notify);
    let released = false;
    return {
      url: db.url,
      description: `an embedded PostgreSQL (PGlite) of its own on 127.0.0.1:${db.port}`,
      release: async () => {
        if (released) return;
        released = true;
        await this.giveBack(db);
      },
    };
  }

  private async takeEmbedded(notify: (line: string) => void): Promise<EmbeddedDatabase> {
    while (this.idle.length) {
      const { db, timer } = this.idle.pop()!;
      clearTimeout(timer);
      if (db.alive) return db;
      this.forget(db);
    }
    if (this.embeddedCount < this.maxEmbedded) return this.startEmbedded(notify);
    notify(
      `All ${this.maxEmbedded} embedded databases are in use by other attempts: waiting for one (${this.waiters.length} attempt(s) ahead; KAFKAIQ_EMBEDDED_DATABASES raises the limit).`,
    );
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private async startEmbedded(notify: (line: string) => void): Promise<EmbeddedDatabase> {
    this.embeddedCount++;
    const started = Date.now();
    notify('Starting an embedded PostgreSQL (PGlite) for this attempt...');
    try {
      const db = await EmbeddedDatabase.start();
      this.all.add(db);
      if (this.closed) {
        await db.stop();
        throw new KafkaIqError('INTERNAL', 'The database pool closed.');
      }
      notify(`Embedded PostgreSQL ready after ${((Date.now() - started) / 1000).toFixed(1)} s (${db.rssMb} MB).`);
      return db;
    } catch (err) {
      this.embeddedCount--;
      throw err;
    }
  }

  private forget(db: EmbeddedDatabase): void {
    if (this.all.delete(db)) this.embeddedCount--;
  }

  /** Resets a database an attempt is done with, then hands it to the next waiter or keeps it idle. */
  private async giveBack(db: EmbeddedDatabase): Promise<void> {
    try {
      if (this.closed) throw new KafkaIqError('INTERNAL', 'The database pool is closed.');
      await db.reset();
    } catch (err) {
      if (!this.closed) this.log(`an embedded database could not be reset (${describeError(err)}): replacing it`);
      this.forget(db);
      await db.stop();
      const waiter = this.waiters.shift();
      if (waiter) this.startEmbedded(() => {}).then(waiter.resolve, waiter.reject);
      return;
    }
    const waiter = this.waiters.shift();
    if (waiter) return waiter.resolve(db);
    const timer = setTimeout(() => {
      const i = this.idle.findIndex((x) => x.db === db);
      if (i < 0) return;
      this.idle.splice(i, 1);
      this.forget(db);
      void db.stop();
    }, this.idleMs);
    timer.unref();
    this.idle.push({ db, timer });
  }
}

let shared: DatabasePool | null = null;

/**
 * The process's database pool, made on first use from DATABASE_URL (unset: embedded) and
 * KAFKAIQ_EMBEDDED_DATABASES.
 */
export function databasePool(): DatabasePool {
  if (!shared) {
    const max = Number(process.env.KAFKAIQ_EMBEDDED_DATABASES ?? 2);
    shared = new DatabasePool({
      url: process.env.DATABASE_URL || undefined,
      maxEmbedded: Number.isInteger(max) && max > 0 ? max : 2,
      log: (line) => console.error(`[database] ${line}`),
    });
  }
  return shared;
}
