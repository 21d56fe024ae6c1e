/**
 * The database side of one lab attempt (labs with a `database` block): a database of its own
 * from the pool, the lab's schema applied before the program starts, progress read from the
 * effects while it runs, and the rows read for the effect checks (checkers/database-effects.ts).
 */
import pg from 'pg';
import type { DatabaseSpec, ExpectedEffectSpec } from '../../src/shared/lab.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import { databasePool, redactUrl, type DatabaseLease, type DatabasePool } from '../db/pool.ts';
import { MAX_SQL_ROWS } from '../../src/shared/messages.ts';

/** The longest cell `sql` shows, in characters. */
const MAX_SQL_CELL = 200;
/** How long one `sql` query may take. */
const SQL_TIMEOUT_MS = 3_000;
import type { SeededRecord } from './seeder.ts';

export interface EffectRow {
  id: string;
  value: string | null;
  /** When the row's transaction committed (ms since the epoch), where the server keeps commit timestamps. */
  writtenAt?: number;
}

export class AttemptDatabase {
  private client: pg.Client | null = null;
  private readonly effects = new Map<number, ExpectedEffectSpec | null>();
  private released = false;

  private constructor(
    private readonly spec: DatabaseSpec,
    private readonly lease: DatabaseLease,
  ) {}

  /** Takes a database from the pool and applies the lab's schema. */
  static async open(spec: DatabaseSpec, namespace: string, system: (line: string) => void, pool: DatabasePool = databasePool()): Promise<AttemptDatabase> {
    const lease = await pool.acquire(namespace, system);
    const db = new AttemptDatabase(spec, lease);
    try {
      await db.query(spec.schema);
    } catch (err) {
      await db.release();
      if (err instanceof KafkaIqError) throw err;
      throw new KafkaIqError('LAB_INVALID', `The lab's database.schema failed: ${describeError(err)}`, { cause: err });
    }
    // Never the password: the URL is the attempt's credential (the program reads it from its env).
    system(`Database: ${lease.description}, with the lab's tables; DATABASE_URL=${redactUrl(lease.url)}`);
    return db;
  }

  /** The program's DATABASE_URL. */
  get url(): string {
    return this.lease.url;
  }

  private async query(sql: string): Promise<pg.QueryResult> {
    if (!this.client) {
      // The grader's SQL is bounded like everything else: a program holding locks cannot hang it.
      const client = new pg.Client({ connectionString: this.lease.url, connectionTimeoutMillis: 30_000, statement_timeout: 15_000, query_timeout: 20_000 });
      client.on('error', () => {
        if (this.client === client) this.client = null;
      });
      try {
        await client.connect();
      } catch (err) {
        throw new KafkaIqError('DATABASE_UNAVAILABLE', `The attempt's database does not answer: ${describeError(err)}`, { cause: err });
      }
      this.client = client;
    }
    return this.client.query(sql);
  }

  private effectOf(input: SeededRecord): ExpectedEffectSpec | null {
    if (!this.effects.has(input.index)) this.effects.set(input.index, this.spec.effect(input));
    return this.effects.get(input.index)!;
  }

  /** One row per applied effect, as the lab's `effects` query returns them. */
  async rows(): Promise<EffectRow[]> {
    const result = await this.query(this.spec.effects);
    return result.rows.map((row: Record<string, unknown>) => ({
      id: String(row.id),
      value: row.value === undefined || row.value === null ? null : String(row.value),
    }));
  }

  /**
   * How many of these committed inputs have their effect in the database (progress while running).
   * Several inputs may share an id (the latest value of a key wins, as in an upsert): then the
   * inputs up to the one whose value the row holds count, not all of them as soon as the first
   * is applied, or the grader would stop the program before the latest values are written.
   */
  async appliedCount(committed: SeededRecord[]): Promise<number> {
    const rows = await this.rows();
    const present = new Set(rows.map((r) => r.id));
    const valuesById = new Map<string, Set<string | null>>();
    for (const r of rows) valuesById.set(r.id, (valuesById.get(r.id) ?? new Set()).add(r.value));
    const byId = new Map<string, ExpectedEffectSpec[]>();
    for (const input of committed) {
      const effect = this.effectOf(input);
      if (effect) byId.set(effect.id, [...(byId.get(effect.id) ?? []), effect]);
    }
    let applied = 0;
    for (const [id, effects] of byId) {
      if (!present.has(id)) continue;
      if (effects.length === 1 || effects.some((e) => e.value === undefined)) {
        applied += effects.length;
        continue;
      }
      const values = valuesById.get(id)!;
      let upTo = -1;
      effects.forEach((e, i) => {
        if (values.has(e.value!)) upTo = i;
      });
      applied += upTo + 1;
    }
    return applied;
  }

  /**
   * The rows with the time their transaction committed, for the evidence ("after fault X"): where
   * the server keeps commit timestamps (track_commit_timestamp, on in the embedded database) and
   * the lab's effects query reads one table (`... FROM <table>`). Otherwise null: the rows are
   * judged the same, only without times. Times are evidence, never part of a verdict.
   */
  private async timedRows(): Promise<EffectRow[] | null> {
    const table = /\sFROM\s+([a-z_][a-z0-9_]*)\s*$/i.exec(this.spec.effects.trim());
    if (!table) return null;
    try {
      const setting = await this.query('SHOW track_commit_timestamp');
      if ((setting.rows[0] as Record<string, unknown> | undefined)?.track_commit_timestamp !== 'on') return null;
      const timed = this.spec.effects.trim().replace(table[0], `, pg_xact_commit_timestamp(${table[1]}.xmin) AS written_at FROM ${table[1]}`);
      const result = await this.query(timed);
      return result.rows.map((row: Record<string, unknown>) => ({
        id: String(row.id),
        value: row.value === undefined || row.value === null ? null : String(row.value),
        ...(row.written_at instanceof Date ? { writtenAt: row.written_at.getTime() } : {}),
      }));
    } catch {
      // A table the program reshaped, or a server that refuses: the untimed query below decides.
      return null;
    }
  }

  /** The rows the program left, for the checkers (checkers/database-effects.ts); an error if they cannot be read. */
  async readRows(): Promise<{ rows: EffectRow[] } | { error: string }> {
    try {
      return { rows: (await this.timedRows()) ?? (await this.rows()) };
    } catch (err) {
      // The program dropped or changed the lab's table, or the database is gone: nothing to count.
      return { error: describeError(err) };
    }
  }

  get isReleased(): boolean {
    return this.released;
  }

  /**
   * The terminal's `sql`: one SELECT (or WITH ... SELECT) of the learner's, on a connection of its
   * own with the program's credentials, inside a READ ONLY transaction that is rolled back, sent
   * with the extended protocol (one statement only: `SELECT 1; DROP TABLE t` is refused by the
   * server), bounded in time, rows and cell length.
   */
  async readOnlyQuery(query: string): Promise<{ columns: string[]; rows: (string | null)[][]; truncated: boolean }> {
    const text = query.trim().replace(/;\s*$/, '');
    const start = text.replace(/^(\s|--[^\n]*\n|\/\*[\s\S]*?\*\/)+/, '');
    if (!/^(select|with)\b/i.test(start)) throw new KafkaIqError('INVALID_INPUT', 'sql runs one SELECT (or WITH ... SELECT) only: it reads the database, it never changes it.');
    if (this.released) throw new KafkaIqError('INVALID_INPUT', "The attempt's database was given back when it ended: press Run, then query it while the program runs.");
    const client = new pg.Client({ connectionString: this.lease.url, connectionTimeoutMillis: 5_000, statement_timeout: SQL_TIMEOUT_MS, query_timeout: SQL_TIMEOUT_MS + 2_000 });
    client.on('error', () => {}); // a dropped connection fails the query below, which says so
    try {
      await client.connect();
      await client.query('BEGIN TRANSACTION READ ONLY');
      // The learner's text inside a subquery: LIMIT bounds what the server sends, whatever it asks for.
      const result = await client.query({
        text: `SELECT * FROM (${text}\n) AS kafkaiq_sql LIMIT ${MAX_SQL_ROWS + 1}`,
        rowMode: 'array',
        queryMode: 'extended',
      } as pg.QueryConfig & { queryMode: 'extended' });
      await client.query('ROLLBACK');
      const rows = (result.rows as unknown[][]).slice(0, MAX_SQL_ROWS).map((row) => row.map(cellText));
      return { columns: result.fields.map((f) => f.name), rows, truncated: result.rows.length > MAX_SQL_ROWS };
    } catch (err) {
      if (err instanceof KafkaIqError) throw err;
      throw new KafkaIqError('INVALID_INPUT', `sql: ${describeError(err)}`, { cause: err });
    } finally {
      await client.end().catch(() => {
        // The answer (or its error) is decided; a one-off client that fails to close changes neither.
      });
    }
  }

  /** Closes the grader's connection and gives the database back to the pool. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const client = this.client;
    this.client = null;
    if (client) await bestEffort("close the grader's connection to the attempt's database", () => client.end());
    await this.lease.release();
  }
}

function cellText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const text = value instanceof Date ? value.toISOString() : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return text.length > MAX_SQL_CELL ? `${text.slice(0, MAX_SQL_CELL)} … [${text.length} characters]` : text;
}
