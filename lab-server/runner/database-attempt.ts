/**
 * The database side of one lab attempt (labs with a `database` block): a database of its own
 * from the pool, the lab's schema applied before the program starts, progress read from the
 * effects while it runs, and the effect checks after it ran.
 */
import pg from 'pg';
import type { DatabaseSpec, ExpectedEffectSpec, LabDefinition } from '../../src/shared/lab.ts';
import type { CheckName, CheckResult } from '../../src/shared/report.ts';
import { describeError, KafkaIqError } from '../core/errors.ts';
import { databasePool, type DatabaseLease, type DatabasePool } from '../db/pool.ts';
import { checkEffects } from './effects.ts';
import type { SeededRecord } from './seeder.ts';

const MAX_EVIDENCE = 20;

export interface EffectRow {
  id: string;
  value: string | null;
}

const show = (v: string | null, max = 120) => (v === null ? 'null' : JSON.stringify(v.length > max ? `${v.slice(0, max)}…` : v));
const inputLabel = (r: SeededRecord) => `${r.topic}-${r.partition}@${r.offset} key=${r.key}`;

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
    system(`Database: ${lease.description}, with the lab's tables; DATABASE_URL=${lease.url}`);
    return db;
  }

  /** The program's DATABASE_URL. */
  get url(): string {
    return this.lease.url;
  }

  private async query(sql: string): Promise<pg.QueryResult> {
    if (!this.client) {
      const client = new pg.Client({ connectionString: this.lease.url, connectionTimeoutMillis: 30_000 });
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
   * no-duplicate-effects and no-lost-effects (checkEffects), effects-correct (each row's value is
   * what its input gives) and no-aborted-reads (no effect of an input written in an aborted
   * transaction), for the ones the lab lists. Also the number of rows, for the report's stats.
   */
  async verify(lab: LabDefinition, inputs: SeededRecord[]): Promise<{ checks: CheckResult[]; rows: number }> {
    const wanted = (name: CheckName) => lab.checks.includes(name);
    const what = this.spec.what;
    let rows: EffectRow[];
    try {
      rows = await this.rows();
    } catch (err) {
      // The program dropped or changed the lab's table, or the database is gone: nothing to count.
      const summary = `the grader could not read the ${what}s: ${describeError(err)}`;
      const names: CheckName[] = ['no-duplicate-effects', 'no-lost-effects', 'effects-correct', 'no-aborted-reads'];
      return { checks: names.filter(wanted).map((name) => ({ name, passed: false, summary, evidence: [this.spec.effects] })), rows: 0 };
    }
    // Inputs come in seeding order: when several committed inputs share an id, the LAST one's
    // value is the one its row must hold (an upsert of the latest value, e.g. a window's count).
    const expected = new Map<string, { input: SeededRecord; effect: ExpectedEffectSpec }>();
    for (const input of inputs.filter((r) => r.committed)) {
      const effect = this.effectOf(input);
      if (effect) expected.set(effect.id, { input, effect });
    }
    const aborted = new Map<string, SeededRecord>();
    // Ids that committed inputs share with aborted ones (the latest value of a key wins): a row
    // holding a value that only an aborted input carries was read from an aborted transaction.
    const committedValues = new Map<string, Set<string>>();
    for (const input of inputs.filter((r) => r.committed)) {
      const effect = this.effectOf(input);
      if (effect?.value !== undefined) committedValues.set(effect.id, (committedValues.get(effect.id) ?? new Set()).add(effect.value));
    }
    const abortedValues = new Map<string, Map<string, SeededRecord>>();
    for (const input of inputs.filter((r) => !r.committed)) {
      const effect = this.effectOf(input);
      if (effect && !expected.has(effect.id)) aborted.set(effect.id, input);
      else if (effect?.value !== undefined && !committedValues.get(effect.id)?.has(effect.value)) {
        abortedValues.set(effect.id, (abortedValues.get(effect.id) ?? new Map()).set(effect.value, input));
      }
    }
    const abortedValueOf = (r: EffectRow) => (r.value === null ? undefined : abortedValues.get(r.id)?.get(r.value));
    // Effects of aborted inputs are their own check when the lab lists it; otherwise they show up
    // under no-duplicate-effects as effects no committed input asks for.
    const abortedRows = wanted('no-aborted-reads') ? rows.filter((r) => aborted.has(r.id)) : [];
    const abortedValueRows = wanted('no-aborted-reads') ? rows.filter((r) => abortedValueOf(r)) : [];
    const counted = abortedRows.length ? rows.filter((r) => !aborted.has(r.id)) : rows;
    const checks = checkEffects(
      [...expected].map(([id, { input }]) => ({ id, source: inputLabel(input) })),
      counted.map((r) => ({ id: r.id, count: 1 })),
      what,
    );

    const wrong: string[] = [];
    for (const row of rows) {
      const want = expected.get(row.id);
      if (!want || want.effect.value === undefined || row.value === want.effect.value) continue;
      wrong.push(`${inputLabel(want.input)}: ${what} "${row.id}" is ${show(row.value)}, expected ${show(want.effect.value)}`);
    }
    checks.push({
      name: 'effects-correct',
      passed: wrong.length === 0,
      summary: wrong.length === 0 ? `every ${what} holds what its input says` : `${wrong.length} ${what}s do not hold what their input says`,
      evidence: wrong.slice(0, MAX_EVIDENCE),
    });
    const abortedIds = [...new Set(abortedRows.map((r) => r.id))];
    const abortedEvidence = [
      ...abortedIds.map((id) => `${what} "${id}" comes from aborted input ${inputLabel(aborted.get(id)!)}`),
      ...abortedValueRows.map((r) => `${what} "${r.id}" holds ${show(r.value)}, the value of aborted input ${inputLabel(abortedValueOf(r)!)}`),
    ];
    const abortedCount = abortedIds.length + new Set(abortedValueRows.map((r) => r.id)).size;
    checks.push({
      name: 'no-aborted-reads',
      passed: abortedEvidence.length === 0,
      summary:
        abortedEvidence.length === 0
          ? `no ${what}s for any of the ${inputs.filter((r) => !r.committed).length} aborted input records`
          : `${abortedCount} ${what}s come from input written in aborted transactions (read_uncommitted?)`,
      evidence: abortedEvidence.slice(0, MAX_EVIDENCE),
    });
    return { checks: checks.filter((c) => wanted(c.name)), rows: rows.length };
  }

  /** Closes the grader's connection and gives the database back to the pool. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
    await this.lease.release();
  }
}
