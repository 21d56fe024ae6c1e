/**
 * Database labs whose effects share an id (the latest value of a key wins: an upsert of a window's
 * count, as in read-committed-downstream): the grader expects the LAST committed input's value,
 * flags a row holding a value only an aborted input carries as an aborted read, and counts
 * progress up to the input whose value the row holds. The checks are a pure function of the rows;
 * for the progress count the database is stubbed (no broker, no PostgreSQL).
 */
import { describe, expect, it } from 'vitest';
import { pipelineLabSchema } from '../../src/shared/lab.ts';
import { checkDatabaseEffects } from '../../lab-server/runner/checkers/database-effects.ts';
import { AttemptDatabase, type EffectRow } from '../../lab-server/runner/database-attempt.ts';
import { planSeedTransactions, type SeededRecord } from '../../lab-server/runner/seeder.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';

const lab = pipelineLabSchema.parse({
  title: 'latest value',
  summary: 'upsert the latest value per key',
  env: [{ name: 'DATABASE_URL', description: 'db' }],
  topics: [{ name: 'input', env: 'INPUT_TOPIC', partitions: 1, role: 'input', description: 'in' }],
  faults: { full: [{ kind: 'kill' }], quick: [{ kind: 'kill' }] },
  checks: ['no-duplicate-effects', 'no-lost-effects', 'effects-correct', 'no-aborted-reads'],
  database: {
    schema: 'CREATE TABLE t (k text, v text)',
    effects: 'SELECT k AS id, v AS value FROM t',
    effect: (input: { value: string }) => {
      const [id, value] = input.value.split('=');
      return { id: id!, value: value! };
    },
  },
});

let index = 0;
const input = (value: string, committed: boolean): SeededRecord => ({
  topic: 'input', partition: 0, key: 'k', value, index: index++, committed, offset: index,
});

// Window a: 10, then 12, then an aborted 99; window b: 5, then 3 (lower: a correction); window c
// only in an aborted transaction.
const inputs = [input('a=10', true), input('b=5', true), input('a=12', true), input('a=99', false), input('b=3', true), input('c=7', false)];

function database(rows: EffectRow[]): AttemptDatabase {
  const db = Object.create(AttemptDatabase.prototype) as AttemptDatabase;
  Object.assign(db, { spec: lab.database, effects: new Map(), rows: async () => rows });
  return db;
}

const verdicts = async (rows: EffectRow[]) =>
  Object.fromEntries(checkDatabaseEffects(lab.database!, lab, inputs, { rows }).checks.map((c) => [c.name, c.passed]));

describe('effects whose id is shared by several inputs', () => {
  it('passes when each row holds the last committed value', async () => {
    expect(await verdicts([{ id: 'a', value: '12' }, { id: 'b', value: '3' }])).toEqual({
      'no-duplicate-effects': true, 'no-lost-effects': true, 'effects-correct': true, 'no-aborted-reads': true,
    });
  });

  it('flags an older committed value as incorrect, not as an aborted read', async () => {
    const v = await verdicts([{ id: 'a', value: '10' }, { id: 'b', value: '3' }]);
    expect(v['effects-correct']).toBe(false);
    expect(v['no-aborted-reads']).toBe(true);
  });

  it('flags a value only an aborted input carries, and rows of aborted-only ids', async () => {
    const checks = checkDatabaseEffects(lab.database!, lab, inputs, { rows: [{ id: 'a', value: '99' }, { id: 'b', value: '3' }, { id: 'c', value: '7' }] }).checks;
    const aborted = checks.find((c) => c.name === 'no-aborted-reads')!;
    expect(aborted.passed).toBe(false);
    expect(aborted.evidence.join('\n')).toMatch(/"a" holds "99"/);
    expect(aborted.evidence.join('\n')).toMatch(/"c" comes from aborted input/);
    // The aborted value still occupies window a's row: no duplicate, no loss, but not correct.
    expect(checks.find((c) => c.name === 'no-duplicate-effects')!.passed).toBe(true);
    expect(checks.find((c) => c.name === 'effects-correct')!.passed).toBe(false);
  });

  it('counts two rows of one id as a duplicate', async () => {
    const v = await verdicts([{ id: 'a', value: '10' }, { id: 'a', value: '12' }, { id: 'b', value: '3' }]);
    expect(v['no-duplicate-effects']).toBe(false);
  });

  it('counts progress up to the input whose value the row holds', async () => {
    const committed = inputs.filter((r) => r.committed);
    // a=10 applied (1 of a's 2 inputs), b=5 applied (1 of b's 2).
    expect(await database([{ id: 'a', value: '10' }, { id: 'b', value: '5' }]).appliedCount(committed)).toBe(2);
    // a=12 (both of a's), b=3 (both of b's).
    expect(await database([{ id: 'a', value: '12' }, { id: 'b', value: '3' }]).appliedCount(committed)).toBe(4);
    // A value no input gives: the row exists but proves nothing yet.
    expect(await database([{ id: 'a', value: '1000' }]).appliedCount(committed)).toBe(0);
  });
});

// ---- read-committed-downstream, on its own seeded input ------------------------------------------
//
// Which seeding transactions abort moves with the grade's seed (one of abortEvery phases). Whatever
// the phase, a reader of uncommitted data must end with rows the checks can tell apart from the
// committed state. Tell-tale values built for one phase only are not enough: in the other phases an
// aborted firing carries ordinary counts, the next firing's correction overwrites them, and a
// read_uncommitted program passes. So the test covers every phase (40 seeds).

describe('read-committed-downstream, for every seed', () => {
  it('leaves a trace of the aborted firings in a read_uncommitted reader, and holds an aborted one open', async () => {
    const rcd = (await loadLab('read-committed-downstream')).definition;
    if (rcd.kind !== 'pipeline' || !rcd.database) throw new Error('read-committed-downstream is a database pipeline lab');
    const db = rcd.database;
    const phases = new Set<string>();
    for (let seed = 1; seed <= 40; seed++) {
      const txns = planSeedTransactions(rcd, seed);
      phases.add(txns.map((t) => (t.commit ? 'c' : 'a')).join(''));
      const held = txns.filter((t) => t.holdMs);
      expect(held, `seed ${seed}`).toHaveLength(1);
      expect(held[0]!.commit, `seed ${seed}: the held transaction aborts`).toBe(false);
      const seeded: SeededRecord[] = txns.flatMap((t) => t.records.map((r) => ({ ...r, committed: t.commit, offset: r.index })));
      // Upsert readers: the last record of each window wins; totals are derived, so each row holds its count.
      const upsert = (records: SeededRecord[]): EffectRow[] => {
        const rows = new Map<string, string>();
        for (const r of records) {
          const e = db.effect(r)!;
          rows.set(e.id, e.value!);
        }
        return [...rows].map(([id, value]) => ({ id, value }));
      };
      const verdict = (rows: EffectRow[]) =>
        Object.fromEntries(checkDatabaseEffects(db, rcd, seeded, { rows }).checks.map((c) => [c.name, c.passed]));
      expect(verdict(upsert(seeded.filter((r) => r.committed))), `seed ${seed}: read_committed`).toEqual({
        'no-duplicate-effects': true, 'no-lost-effects': true, 'effects-correct': true, 'no-aborted-reads': true,
      });
      expect(verdict(upsert(seeded))['no-aborted-reads'], `seed ${seed}: read_uncommitted`).toBe(false);
    }
    expect(phases.size, 'the 40 seeds cover every phase').toBe(4);
  });
});
