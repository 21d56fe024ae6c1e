/**
 * The attempt store's contract, held by both engines: the SQLite file (the default) and
 * PostgreSQL (KAFKAIQ_DATABASE_URL, for several lab servers), the latter on a real server this
 * test starts (Debian's binaries; CI installs them). Two stores opened on one PostgreSQL database
 * are what two lab servers are: each sees what the other wrote.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODE_KEPT_PER_LAB, openAttemptStore, type AttemptStore } from '../../lab-server/server/attempt-store.ts';
import { learnerLabel } from '../../lab-server/server/class-queries.ts';
import { openPostgresAttemptStore } from '../../lab-server/server/postgres-attempt-store.ts';
import { fakeReport } from '../support/fake-lab-session.ts';
import { postgresBin, POSTGRES_MISSING, ThrowawayPostgres } from '../support/postgres.ts';

const bin = postgresBin();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-store-contract-'));
/** How long untouched before a grade is abandoned, in the reaping test. */
const STALE_MS = 1000;
let server: ThrowawayPostgres | null = null;
let database = 0;

/** A fresh PostgreSQL database per store under test, so each case starts empty. */
async function freshPostgresUrl(): Promise<string> {
  const admin = await openPostgresAttemptStore(server!.url); // migrates the default database: harmless
  await admin.close();
  const name = `contract_${++database}`;
  const { default: pg } = await import('pg');
  const client = new pg.Client(server!.url);
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  return server!.url.replace(/\/postgres$/, `/${name}`);
}

const engines: Array<[string, () => Promise<{ open: () => Promise<AttemptStore> }>]> = [
  ['SQLite', async () => {
    const file = path.join(tmp, `s-${Math.random().toString(36).slice(2)}.sqlite`);
    return { open: async () => openAttemptStore({ file }) };
  }],
  ['PostgreSQL', async () => {
    const url = await freshPostgresUrl();
    return { open: () => openPostgresAttemptStore(url) };
  }],
];

beforeAll(async () => {
  if (!bin) return;
  server = new ThrowawayPostgres(bin);
  await server.start();
}, 60_000);

afterAll(() => {
  server?.stopNow();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('PostgreSQL for the attempt store', () => {
  it.runIf(!bin && Boolean(process.env.CI))('is installed in CI', () => {
    expect.fail(POSTGRES_MISSING);
  });

  it.runIf(Boolean(bin))('refuses an unreachable database in one line naming the setting', async () => {
    await expect(openPostgresAttemptStore('postgresql://nobody@127.0.0.1:1/none')).rejects.toThrow(/^KAFKAIQ_DATABASE_URL names a PostgreSQL that cannot be used \(.*\): start it, or unset KAFKAIQ_DATABASE_URL/);
  });
});

describe.each(engines)('the attempt store on %s', (engine, make) => {
  const ready = () => Boolean(bin) || engine === 'SQLite';

  it.runIf(ready())('keeps history, code of the newest attempts, passes (never a replay or a quick grade) and reveals', async () => {
    const { open } = await make();
    const store = await open();
    expect(await store.recordReveal('learner-a', 'copy')).toBe('no-grade');
    const first = await store.save('learner-a', fakeReport('copy', { verdict: 'fail', checks: [{ name: 'no-loss', passed: false, summary: 'lost 2', evidence: [] }] }), 'first();\n');
    await store.save('learner-a', fakeReport('copy', { replay: true }), 'replayed();\n');
    await store.save('learner-a', fakeReport('copy', { quick: true }), 'quick();\n');
    expect((await store.history('learner-a')).passedLabs).toEqual([]);
    expect(await store.recordReveal('learner-a', 'copy')).toMatchObject({ lab: 'copy', beforePass: true });
    const passed = await store.save('learner-a', fakeReport('copy'), 'passed();\n');
    const history = await store.history('learner-a', 'copy');
    expect(history.passedLabs).toEqual(['copy']);
    expect(history.attempts.map((a) => [a.id, a.n, a.verdict, a.hasCode])).toEqual([
      [passed, 4, 'pass', true],
      [passed - 1, 3, 'pass', true],
      [passed - 2, 2, 'pass', true],
      [first, 1, 'fail', true],
    ]);
    expect(history.reveals).toHaveLength(1);
    expect(await store.attempt('learner-a', first)).toMatchObject({ code: 'first();\n', summary: { n: 1 }, report: { verdict: 'fail' } });
    expect(await store.attempt('learner-b', first)).toBeNull();
    expect(await store.get('learner-a', passed)).toMatchObject({ lab: 'copy', verdict: 'pass' });
    for (let i = 0; i < CODE_KEPT_PER_LAB; i++) await store.save('learner-a', fakeReport('copy', { verdict: 'fail' }), `again ${i}`);
    expect((await store.attempt('learner-a', first))?.code).toBeNull();
    expect((await store.attempt('learner-a', first))?.report.verdict).toBe('fail');
    await store.close();
  });

  it.runIf(ready())('keeps names unique by what they look like, moves an anonymous learner into an account, and answers the class view', async () => {
    const { open } = await make();
    const [one, two] = [await open(), await open()];
    expect(await one.setDisplayName('learner-a', 'Ada')).toBe('saved');
    expect(await two.setDisplayName('learner-b', 'ADA')).toBe('taken');
    await one.save('learner-a', fakeReport('single-stage', { verdict: 'fail', checks: [{ name: 'no-duplicates', passed: false, summary: '2', evidence: [] }] }));
    await one.save('learner-a', fakeReport('single-stage'));
    await two.save('anonymous-c', fakeReport('zombie', { verdict: 'fail' }), 'mine();\n');
    // The anonymous learner signs in: their work joins the account, on either server.
    expect(await two.adopt('anonymous-c', 'acct_account-c')).toBe(1);
    expect((await one.history('acct_account-c')).attempts).toHaveLength(1);
    expect((await one.history('anonymous-c')).attempts).toHaveLength(0);
    const roster = await one.classRoster({ offset: 0, limit: 10, sort: 'attempts' });
    expect(roster.total).toBe(2);
    expect(roster.learners.map((l) => [l.displayName, l.attempts, l.passedLabs])).toEqual([
      ['Ada', 2, ['single-stage']],
      [null, 1, []],
    ]);
    expect((await two.classRoster({ offset: 0, limit: 10, name: 'ad' })).total).toBe(1);
    expect((await two.classRoster({ offset: 0, limit: 10, lab: 'zombie' })).learners.map((l) => l.label)).toEqual([learnerLabel('acct_account-c')]);
    const learner = await two.classLearner(learnerLabel('acct_account-c'));
    expect(learner?.attempts.map((a) => [a.report.lab, a.code])).toEqual([['zombie', 'mine();\n']]);
    expect(await two.classLearner('learner 000000000000')).toBeNull();
    expect(await one.classLabs()).toEqual([
      { lab: 'single-stage', learners: 1, attempts: 2, passedLearners: 1, failingChecks: [{ check: 'no-duplicates', failures: 1 }], medianAttemptsToPass: 2 },
      { lab: 'zombie', learners: 1, attempts: 1, passedLearners: 0, failingChecks: [], medianAttemptsToPass: null },
    ]);
    expect(await two.gradedLabs()).toEqual(['single-stage', 'zombie']);
    // Lesson progress, as a browser reports it: counted in the roster, shown per learner, moved with an adopted learner.
    const lesson = { opened: true, answered: 1, right: 1, checks: 1, labsPassed: 0, labs: 0, complete: true };
    await one.saveProgress('anonymous-d', { lessons: { '10-1/01-transaction-protocol': lesson } });
    await two.adopt('anonymous-d', 'acct_account-c');
    expect((await one.classRoster({ offset: 0, limit: 10, lab: 'zombie' })).learners[0]?.lessonsComplete).toBe(1);
    expect((await one.classLearner(learnerLabel('acct_account-c')))?.progress?.lessons['10-1/01-transaction-protocol']).toEqual(lesson);
    await one.saveProgress('acct_account-c', { lessons: {} });
    expect((await two.classRoster({ offset: 0, limit: 10, lab: 'zombie' })).learners[0]?.lessonsComplete).toBe(0);
    await Promise.all([one.close(), two.close()]);
  });

  it.runIf(ready())("turns a grade whose server stopped touching it into an error attempt, once, whichever server finds it", async () => {
    const { open } = await make();
    const [one, two] = [await open(), await open()];
    const grade = { lab: 'single-stage', quick: false, seed: 42, server: 'lab-a/123', startedAt: new Date().toISOString() };
    const alive = await one.gradeStarted('learner-g', grade);
    const dead = await one.gradeStarted('learner-g', { ...grade, lab: 'copy' });
    // The window is wide so that a busy machine's pause between touching and reaping (the unit
    // tier runs four files at a time on two cores) cannot make the touched grade look stale.
    await new Promise((resolve) => setTimeout(resolve, STALE_MS + 100));
    await one.gradesAlive([alive]);
    // Both servers look at once: the untouched grade becomes one attempt, the touched one is left alone.
    const reaped = await Promise.all([one.reapAbandonedGrades('learner-g', STALE_MS), two.reapAbandonedGrades('learner-g', STALE_MS)]);
    expect(reaped.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(1);
    const history = await two.history('learner-g');
    expect(history.attempts.map((a) => [a.lab, a.verdict])).toEqual([['copy', 'error']]);
    expect((await two.get('learner-g', history.attempts[0]!.id))?.message).toMatch(/^The lab server grading this \(lab-a\/123\) stopped before the grade finished/);
    await one.gradeEnded(alive);
    await new Promise((resolve) => setTimeout(resolve, STALE_MS + 100));
    expect(await two.reapAbandonedGrades('learner-g', STALE_MS)).toBe(0);
    expect(dead).not.toBe(alive);
    await Promise.all([one.close(), two.close()]);
  });
});
