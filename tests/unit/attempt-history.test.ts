/**
 * The learner's history in the attempt store: every grade keeps its report and the exact program
 * it graded (the newest CODE_KEPT_PER_LAB of a lab keep the program), attempts are numbered per lab,
 * a store from before the code column is migrated in place, and reveals of the reference solution
 * are recorded (only after a grade, and whether they came before the first pass). Also the pure
 * helpers the workbench's history uses: the line diff, the terminal's history/sql/consume commands
 * and the lesson a lab counts toward.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, describe, expect, it } from 'vitest';
import { CODE_KEPT_PER_LAB, openAttemptStore } from '../../lab-server/server/attempt-store.ts';
import { diffHunks, unifiedDiff } from '../../src/shared/line-diff.ts';
import { parseCommand } from '../../src/components/workbench/terminal/commands.ts';
import { labHomes, splitLabs } from '../../src/shared/lesson-labs.ts';
import { displayNameSchema } from '../../src/shared/class-view.ts';
import { fakeReport } from '../support/fake-lab-session.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-history-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('attempt store: history with code', () => {
  it('keeps the graded program with each attempt, numbers attempts per lab, and shows them only to their session', async () => {
    const store = openAttemptStore({ file: path.join(tmp, 'a.sqlite') });
    const first = (await store.save('learner-one', fakeReport('single-stage', { verdict: 'fail' }), 'const v = 1;\n'));
    await store.save('learner-one', fakeReport('copy'), 'copy();\n');
    const second = (await store.save('learner-one', fakeReport('single-stage'), 'const v = 2;\n'));
    const history = await store.history('learner-one', 'single-stage');
    expect(history.attempts.map((a) => [a.id, a.n, a.verdict, a.hasCode])).toEqual([
      [second, 2, 'pass', true],
      [first, 1, 'fail', true],
    ]);
    expect(await store.attempt('learner-one', first)).toMatchObject({ code: 'const v = 1;\n', summary: { n: 1, lab: 'single-stage' }, report: { verdict: 'fail' } });
    expect(await store.attempt('learner-two', first)).toBeNull();
    // Saved without code (a CLI grade, an old caller): the report is kept, the program is not.
    const noCode = await store.save('learner-one', fakeReport('zombie'));
    expect((await store.attempt('learner-one', noCode))?.code).toBeNull();
    expect((await store.history('learner-one', 'zombie')).attempts[0]?.hasCode).toBe(false);
    await store.close();
  });

  it(`keeps the program of the newest ${CODE_KEPT_PER_LAB} attempts of a lab only`, async () => {
    const store = openAttemptStore({ file: path.join(tmp, 'bound.sqlite') });
    const ids: number[] = [];
    for (let i = 0; i < CODE_KEPT_PER_LAB + 3; i++) ids.push(await store.save('learner-b', fakeReport('copy', { verdict: 'fail' }), `// attempt ${i}\n`));
    await store.save('learner-b', fakeReport('zombie'), 'other lab');
    expect((await store.attempt('learner-b', ids[0]!))?.code).toBeNull();
    expect((await store.attempt('learner-b', ids[2]!))?.code).toBeNull();
    expect((await store.attempt('learner-b', ids[3]!))?.code).toBe('// attempt 3\n');
    expect((await store.attempt('learner-b', ids.at(-1)!))?.code).toBe(`// attempt ${CODE_KEPT_PER_LAB + 2}\n`);
    // The report of an attempt without its program is still there.
    expect((await store.attempt('learner-b', ids[0]!))?.report.lab).toBe('copy');
    await store.close();
  });

  it('migrates a store written before programs were kept', async () => {
    const file = path.join(tmp, 'old.sqlite');
    // The schema of the first three migrations, with one attempt in it.
    const old = new DatabaseSync(file);
    old.exec(`CREATE TABLE attempts (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, lab TEXT NOT NULL,
      verdict TEXT NOT NULL, seed INTEGER NOT NULL, quick INTEGER NOT NULL, duration_ms REAL NOT NULL, created_at TEXT NOT NULL, report TEXT NOT NULL);
      CREATE INDEX attempts_by_session ON attempts (session_id, lab, id);
      CREATE TABLE learners (session_id TEXT PRIMARY KEY, display_name TEXT NOT NULL, updated_at TEXT NOT NULL);
      ALTER TABLE learners ADD COLUMN name_key TEXT; CREATE UNIQUE INDEX learners_by_name_key ON learners (name_key);
      PRAGMA user_version = 3;`);
    old.prepare(`INSERT INTO attempts (session_id, lab, verdict, seed, quick, duration_ms, created_at, report) VALUES (?, ?, 'pass', 1, 0, 10, ?, ?)`).run(
      'learner-old',
      'copy',
      new Date(0).toISOString(),
      JSON.stringify(fakeReport('copy')),
    );
    old.close();
    const store = openAttemptStore({ file });
    const [attempt] = (await store.history('learner-old')).attempts;
    expect(attempt).toMatchObject({ lab: 'copy', n: 1, hasCode: false });
    expect((await store.history('learner-old')).passedLabs).toEqual(['copy']);
    await store.close();
  });

  it('records a reveal of the reference solution only after a grade, and whether it came before the first pass', async () => {
    const store = openAttemptStore({ file: path.join(tmp, 'reveal.sqlite') });
    expect(await store.recordReveal('learner-r', 'copy')).toBe('no-grade');
    await store.save('learner-r', fakeReport('copy', { verdict: 'fail' }), 'x');
    expect(await store.recordReveal('learner-r', 'copy')).toMatchObject({ lab: 'copy', beforePass: true });
    // A replayed seed is not a pass.
    await store.save('learner-r', fakeReport('copy', { replay: true }), 'x');
    await store.save('learner-r', fakeReport('single-stage'), 'y');
    expect(await store.recordReveal('learner-r', 'single-stage')).toMatchObject({ beforePass: false });
    expect((await store.history('learner-r', 'copy')).reveals).toHaveLength(1);
    expect((await store.history('learner-r')).reveals.map((r) => [r.lab, r.beforePass])).toEqual([
      ['single-stage', false],
      ['copy', true],
    ]);
    const [learner] = (await store.classRoster({ offset: 0, limit: 10 })).learners;
    expect(learner?.reveals.map((r) => r.lab)).toEqual(['single-stage', 'copy']);
    await store.close();
  });
});

describe('line diff', () => {
  it('shows changed lines with three lines of context, and nothing for equal texts', async () => {
    const before = Array.from({ length: 12 }, (_, i) => `line ${i}`).join('\n');
    const after = before.replace('line 5', 'LINE 5');
    expect(unifiedDiff(before, after, { old: 'attempt #1', new: 'your code' })).toEqual([
      '--- attempt #1',
      '+++ your code',
      '@@ -3,7 +3,7 @@',
      ' line 2',
      ' line 3',
      ' line 4',
      '-line 5',
      '+LINE 5',
      ' line 6',
      ' line 7',
      ' line 8',
    ]);
    expect(unifiedDiff(before, `${before}\n`, { old: 'a', new: 'b' })).toEqual([]);
    expect(diffHunks('a\nb\n', 'a\nc\nb\n')).toEqual([{ oldStart: 1, oldLines: 2, newStart: 1, newLines: 3, lines: [{ op: ' ', text: 'a' }, { op: '+', text: 'c' }, { op: ' ', text: 'b' }] }]);
  });
});

describe('terminal commands of the history, sql and consume', () => {
  it('parses history, history show|load|diff N, sql and a bounded consume', async () => {
    expect(parseCommand('history')).toEqual({ kind: 'history', action: 'list' });
    expect(parseCommand('history diff 3')).toEqual({ kind: 'history', action: 'diff', n: 3 });
    expect(parseCommand('history load #2')).toEqual({ kind: 'history', action: 'load', n: 2 });
    expect(parseCommand('history drop 2').kind).toBe('invalid');
    expect(parseCommand("sql SELECT id, value FROM effects WHERE id = 'a b'")).toEqual({ kind: 'inspect', command: { what: 'sql', query: "SELECT id, value FROM effects WHERE id = 'a b'" } });
    expect(parseCommand('sql').kind).toBe('invalid');
    expect(parseCommand('consume output --from 40 --limit 5 --partition 1')).toMatchObject({ kind: 'inspect', command: { what: 'consume', topic: 'output', from: 40, limit: 5, partition: 1 } });
    expect(parseCommand('consume output --limit 0').kind).toBe('invalid');
    expect(parseCommand('consume output --from-beginning')).toMatchObject({ command: { from: 0 } });
  });
});

describe('lesson progress: a lab counts toward one lesson', () => {
  it("gives each lab the lesson named after it, else the first in course order, and the others embed it for practice", async () => {
    const lessons = [
      { id: '10-1/03-consumer-isolation', order: 3, labs: ['single-stage'] },
      { id: '10-1/04-single-stage', order: 4, labs: ['single-stage', 'copy'] },
      { id: '10-1/01-transaction-protocol', order: 1, labs: ['copy'] },
      { id: '10-1/10-anti-patterns', order: 11, labs: ['single-stage'] },
    ];
    const homes = labHomes(lessons);
    expect(homes.get('single-stage')).toBe('10-1/04-single-stage');
    expect(homes.get('copy')).toBe('10-1/01-transaction-protocol');
    expect(splitLabs(lessons[1]!, homes)).toEqual({ own: ['single-stage'], practice: ['copy'] });
    expect(splitLabs(lessons[0]!, homes)).toEqual({ own: [], practice: ['single-stage'] });
  });
});

describe('display names', () => {
  it('accepts parentheses and still refuses a name that passes for another learner’s label', async () => {
    expect(displayNameSchema.parse('Ada (evening class)')).toBe('Ada (evening class)');
    expect(displayNameSchema.safeParse('Ada (learner 1a2b3c4d)').success).toBe(false);
    expect(displayNameSchema.safeParse('<b>Ada</b>').success).toBe(false);
  });
});
