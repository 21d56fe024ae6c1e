/**
 * Where a lab attempt gets its database. Every grade or run of a lab with a `database` block gets
 * one of its own, empty but for the lab's schema, and never one that another attempt touched:
 *
 *  - embedded (the default, nothing to install): a new embedded PostgreSQL (PGlite, embedded.ts)
 *    per attempt, each in a child process of its own that is stopped when the attempt ends. The
 *    pool's first database runs initdb and dumps that pristine data directory; every later one
 *    is restored from the dump (about a third of the time). One is started ahead,
 *    so the next attempt does not wait. At most `maxEmbedded` attempts hold one at once
 *    (KAFKAIQ_EMBEDDED_DATABASES, default 2; each takes a few hundred MB, the one started ahead
 *    as much); beyond that an attempt waits, and says so.
 *  - a real PostgreSQL server, when the lab server is given DATABASE_URL: a database and a role
 *    per attempt, from a pristine template, dropped when the attempt ends (server-databases.ts).
 *    The URL's user must be allowed to create databases and roles.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { KafkaIqError, describeError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import { EmbeddedDatabase, type PristineSnapshot } from './embedded.ts';
import { ServerDatabases, type DatabaseLease } from './server-databases.ts';

export { databaseName, redactUrl, type DatabaseLease } from './server-databases.ts';

export interface DatabasePoolOptions {
  /** A PostgreSQL server (postgres://user:password@host:port/db); unset: embedded databases. */
  url?: string;
  /** Attempts holding an embedded database at once (default 2); one more is started ahead. */
  maxEmbedded?: number;
  /** The embedded database started ahead is stopped when unused this long (default 10 min). */
  idleMs?: number;
  log?: (line: string) => void;
}

export class DatabasePool {
  readonly kind: 'embedded' | 'server';
  private readonly server: ServerDatabases | null;
  private readonly maxEmbedded: number;
  private readonly idleMs: number;
  private readonly log: (line: string) => void;
  /** Attempts holding an embedded database now (at most maxEmbedded). */
  private leased = 0;
  /** Attempts waiting for one of those places; freeSlot hands its place to the first. */
  private readonly waiters: { resolve: () => void; reject: (err: unknown) => void }[] = [];
  /** The database started ahead for the next attempt, and when it is stopped unused. */
  private spare: { db: Promise<EmbeddedDatabase>; timer?: NodeJS.Timeout } | null = null;
  private readonly all = new Set<EmbeddedDatabase>();
  /** The pristine data directory every embedded database after the first starts from. */
  private snapshot: Promise<PristineSnapshot> | null = null;
  private snapshotDir: string | null = null;
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
      this.server = new ServerDatabases(url, this.log);
      this.kind = 'server';
    } else {
      this.server = null;
      this.kind = 'embedded';
    }
  }

  /** A database of its own for one attempt. `notify` gets a line when the attempt has to wait. */
  async acquire(namespace: string, notify: (line: string) => void = () => {}): Promise<DatabaseLease> {
    if (this.closed) throw new KafkaIqError('INTERNAL', 'The database pool is closed.');
    return this.server ? this.server.acquire(namespace) : this.leaseEmbedded(notify);
  }

  /** Fails with a one-line error naming the fix when the database cannot be used (before a check run). */
  async verify(): Promise<void> {
    if (this.server) await this.server.withServer(async () => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) waiter.reject(new KafkaIqError('INTERNAL', 'The database pool closed.'));
    const spare = this.takeSpare();
    await Promise.all([spare?.then((db) => db.stop(), () => {}), ...[...this.all].map((db) => db.stop())]);
    this.all.clear();
    this.leased = 0;
    await this.server?.close();
    if (this.snapshotDir) fs.rmSync(this.snapshotDir, { recursive: true, force: true });
  }

  // ---- embedded databases: one process per attempt, never handed on ----------------------------

  private async leaseEmbedded(notify: (line: string) => void): Promise<DatabaseLease> {
    await this.takeSlot(notify);
    let db: EmbeddedDatabase;
    try {
      db = await this.freshDatabase(notify);
    } catch (err) {
      this.freeSlot();
      throw err;
    }
    // The next attempt's, started while this one runs.
    this.warmSpare();
    let released = false;
    return {
      url: db.url,
      description: `an embedded PostgreSQL (PGlite) of its own on 127.0.0.1:${db.port}, new for this attempt`,
      release: async () => {
        if (released) return;
        released = true;
        await db.stop();
        this.all.delete(db);
        this.freeSlot();
      },
    };
  }

  private async takeSlot(notify: (line: string) => void): Promise<void> {
    if (this.leased < this.maxEmbedded) {
      this.leased++;
      return;
    }
    notify(
      `All ${this.maxEmbedded} embedded databases are in use by other attempts: waiting for one (${this.waiters.length} attempt(s) ahead; KAFKAIQ_EMBEDDED_DATABASES raises the limit).`,
    );
    await new Promise<void>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  private freeSlot(): void {
    const next = this.waiters.shift();
    if (next) next.resolve();
    else this.leased = Math.max(0, this.leased - 1);
  }

  /** The database started ahead if it is up, else a new one. Either way nobody has connected to it yet. */
  private async freshDatabase(notify: (line: string) => void): Promise<EmbeddedDatabase> {
    // A spare that failed to start is no spare: a new database is started below instead.
    const spare = await this.takeSpare()?.catch(() => null);
    if (spare?.alive) return spare;
    const started = Date.now();
    notify('Starting an embedded PostgreSQL (PGlite) for this attempt...');
    const db = await this.startEmbedded();
    notify(`Embedded PostgreSQL ready after ${((Date.now() - started) / 1000).toFixed(1)} s (${db.rssMb} MB).`);
    return db;
  }

  private takeSpare(): Promise<EmbeddedDatabase> | null {
    const spare = this.spare;
    this.spare = null;
    if (spare?.timer) clearTimeout(spare.timer);
    return spare?.db ?? null;
  }

  private warmSpare(): void {
    if (this.closed || this.spare) return;
    const spare: { db: Promise<EmbeddedDatabase>; timer?: NodeJS.Timeout } = { db: this.startEmbedded() };
    this.spare = spare;
    spare.db.then(
      (db) => {
        if (this.spare !== spare) return;
        // Unused this long: its memory is worth more than the next attempt's few seconds.
        spare.timer = setTimeout(() => {
          if (this.spare !== spare) return;
          this.spare = null;
          this.all.delete(db);
          void db.stop();
        }, this.idleMs);
        spare.timer.unref();
      },
      (err) => {
        if (this.spare === spare) this.spare = null;
        if (!this.closed) this.log(`could not start an embedded database ahead: ${describeError(err)}`);
      },
    );
  }

  /** A new process: restored from the pristine snapshot, or, for the pool's first, the one that makes it. */
  private async startEmbedded(): Promise<EmbeddedDatabase> {
    let db: EmbeddedDatabase;
    const snapshot = this.snapshot;
    if (snapshot) {
      try {
        db = await EmbeddedDatabase.start({ snapshot: await snapshot });
      } catch (err) {
        // A snapshot that cannot be restored (its file gone or changed) is made afresh next time.
        if (this.snapshot === snapshot) this.snapshot = null;
        throw err;
      }
    } else {
      if (!this.snapshotDir) {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-pglite-'));
        this.snapshotDir = dir;
        process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
      }
      // A new name each time: the child never writes over a file (flag 'wx').
      const making = EmbeddedDatabase.start({ makeSnapshot: path.join(this.snapshotDir, `pristine-${randomBytes(8).toString('hex')}.tar`) });
      const made = making.then((maker) => maker.snapshot ?? Promise.reject(new KafkaIqError('INTERNAL', 'the embedded database made no snapshot')));
      this.snapshot = made;
      made.catch(() => {
        // The attempt that started it reports the failure; the next start tries again.
        if (this.snapshot === made) this.snapshot = null;
      });
      // The maker is pristine too: it dumped its data directory before it listened.
      db = await making;
    }
    this.all.add(db);
    if (this.closed) {
      await db.stop();
      throw new KafkaIqError('INTERNAL', 'The database pool closed.');
    }
    return db;
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
