/**
 * The lessons' code is proven, not just shown (issue #16):
 *
 * - every complete program of a lesson (a fenced block with `program` in its meta) type-checks as
 *   strict TypeScript against kafkajs's own types;
 * - a lesson never prints a lab's complete answer: it shows the lab's program in parts
 *   (`part=<lab>:<section>`), and the lab's starter with those parts in place is type-checked too
 *   and graded against that lab by the same grader as `kafkaiq check` (gradeProgram): it must PASS.
 *
 * Grades use the lab's quick fault plan to keep CI time down; each of these programs was also
 * graded by hand with the full plan (see AUTHORING.md, "Code in lessons"). KAFKAIQ_LESSON_FULL=1
 * grades them with the full plan instead. Snippets (blocks without `program`) are not checked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClusterPool } from '../lab-server/broker/cluster-pool.ts';
import { listLabIds } from '../lab-server/labs/load-lab.ts';
import { gradeProgram } from '../lab-server/runner/check-labs.ts';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { assembleStarter, lessonPrograms, ROOT, typeCheck } from './support/lesson-programs.ts';
import { testBrokers } from './support/brokers.ts';

const programs = lessonPrograms();
const graded = programs.filter((p) => p.lab);
const full = process.env.KAFKAIQ_LESSON_FULL === '1';

describe('lesson programs', () => {
  it('finds the marked programs, and every lab they name exists', () => {
    // The course shows in parts at least the lab programs of the lessons on producer transactions,
    // single-stage, fan-out, fan-in and HTTP idempotency.
    expect(programs.length).toBeGreaterThanOrEqual(15);
    expect(graded.map((p) => p.lab)).toEqual(expect.arrayContaining(['copy', 'single-stage', 'fan-out', 'fan-in', 'http-idempotency']));
    const labs = listLabIds();
    for (const program of graded) expect(labs, `${program.name} names lab=${program.lab}`).toContain(program.lab);
    for (const program of programs) {
      expect(['ts', 'typescript'], `${program.name}: a program block must be TypeScript`).toContain(program.lang);
      expect(program.code, `${program.name}: a complete program imports what it uses`).toMatch(/^import /m);
    }
  });

  it('prints no lab answer whole: a lab program is its starter with the lesson parts in place', () => {
    expect(graded.length).toBeGreaterThan(0);
    for (const program of graded) {
      expect(program.parts?.length ?? 0, `${program.name}: a graded program comes from parts`).toBeGreaterThan(0);
      for (const part of program.parts!) {
        expect(part.code, `${part.file}:${part.line}: a part is not a whole file (no imports)`).not.toMatch(/^import /m);
        expect(program.code, `${part.file}:${part.line}: the part is in the graded file`).toContain(part.code.trimEnd());
      }
      // The rest comes from the lab's starter: its imports, and every section no part replaces.
      const starter = fs.readFileSync(path.join(ROOT, `labs/${program.lab}/starter.ts`), 'utf8').split('\n');
      const imports = starter.filter((line) => /^import /.test(line));
      expect(imports.length, `labs/${program.lab}/starter.ts imports kafkajs`).toBeGreaterThan(0);
      for (const line of imports) expect(program.code).toContain(line);
    }
    // A complete program never names a lab, and a part must name a section its starter has.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiq-lesson-'));
    try {
      fs.writeFileSync(path.join(dir, 'x.mdx'), "```ts program lab=copy\nimport { Kafka } from 'kafkajs';\n```\n");
      expect(() => lessonPrograms(dir)).toThrow(/x\.mdx:1: a complete program answers lab copy/);
      fs.writeFileSync(path.join(dir, 'x.mdx'), '```ts part=copy:nowhere\nconst a = 1;\n```\n');
      expect(() => lessonPrograms(dir)).toThrow(/x\.mdx:1: part nowhere: labs\/copy\/starter\.ts has no section "\/\/ ---- nowhere"/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs every complete program as it stands: its env named in the lesson, its tables created', () => {
    for (const program of programs.filter((p) => !p.lab)) {
      const lesson = fs.readFileSync(path.join(ROOT, program.file), 'utf8');
      const prose = lesson.replace(/^(`{3,})[\s\S]*?^\1$/gm, '');
      const names = new Set([...program.code.matchAll(/process\.env\.([A-Z_][A-Z0-9_]*)|process\.env\[['"]([A-Z_][A-Z0-9_]*)['"]\]|env\('([A-Z_][A-Z0-9_]*)'\)/g)].map((m) => (m[1] ?? m[2] ?? m[3])!));
      for (const name of names) expect(prose, `${program.name} reads ${name}: name it in the lesson's text`).toMatch(new RegExp(`\\b${name}\\b`));
      // Tables its SQL (string literals with a SQL keyword) uses, created in the program or in a
      // CREATE TABLE the lesson shows.
      const created = new Set([...lesson.matchAll(/CREATE TABLE(?: IF NOT EXISTS)?\s+([a-z_][a-z0-9_]*)/g)].map((m) => m[1]!));
      for (const literal of program.code.matchAll(/'([^'\n]*)'|`([^`]*)`/g)) {
        const sql = literal[1] ?? literal[2] ?? '';
        if (!/\b(SELECT|INSERT|UPDATE|DELETE)\b/.test(sql)) continue;
        for (const table of sql.matchAll(/\b(?:INSERT INTO|UPDATE|DELETE FROM|FROM|JOIN)\s+([a-z_][a-z0-9_]*)/g)) {
          expect(created, `${program.name} uses table ${table[1]}: create it in the program or show its CREATE TABLE`).toContain(table[1]);
        }
      }
    }
  });

  it('puts a part in place of its section of the starter, and knows where each line comes from', () => {
    const starter = { file: 'labs/x/starter.ts', code: "import a from 'a';\n// ---- one: first\nold1();\n\n// ---- two\nold2();\n" };
    const { code, origins } = assembleStarter(starter, new Map([['one', { file: 'l.mdx', line: 7, code: 'new1();\nnew1b();\n' }]]));
    expect(code).toBe("import a from 'a';\n// ---- one: first\nnew1();\nnew1b();\n\n// ---- two\nold2();\n");
    expect(origins).toEqual([
      { file: 'labs/x/starter.ts', line: 1 },
      { file: 'labs/x/starter.ts', line: 2 },
      { file: 'l.mdx', line: 8 },
      { file: 'l.mdx', line: 9 },
      { file: 'l.mdx', line: 10 },
      { file: 'labs/x/starter.ts', line: 5 },
      { file: 'labs/x/starter.ts', line: 6 },
    ]);
    // The last section runs to the end of the file.
    expect(assembleStarter(starter, new Map([['two', { file: 'l.mdx', line: 1, code: 'new2();\n' }]])).code).toBe(
      "import a from 'a';\n// ---- one: first\nold1();\n\n// ---- two\nnew2();\n",
    );
  });

  it('names the lesson line of a type error', () => {
    const wrong = { file: 'src/content/docs/x.mdx', line: 10, lang: 'ts', lab: null, name: 'x.mdx:10', code: "import { Kafka } from 'kafkajs';\nconst kafka = new Kafka({ brokers: 42 });\n" };
    expect(typeCheck([wrong])).toEqual([expect.stringMatching(/^src\/content\/docs\/x\.mdx:12: TS2322 /)]);
  });

  it('shows the partition-slot helper once (10.1.4) and appends it to every program that uses it', () => {
    const users = programs.filter((p) => p.helper?.name === 'partition-slots');
    // Lessons 10.1.4, 10.1.6, 10.1.6.1 and 10.1.7 share it instead of repeating it.
    expect(users.map((p) => path.basename(p.file)).sort()).toEqual(['04-single-stage.mdx', '05-multi-stage.mdx', '06-fan-out.mdx', '08-stateful-stages.mdx']);
    for (const program of users) {
      expect(program.helper!.file).toBe('src/content/docs/10-1/04-single-stage.mdx');
      expect(program.code).toMatch(/\nasync function runPartitionSlots</);
    }
    // A type error in the helper part is reported at the helper's line in lesson 10.1.4, for a
    // complete program and for a lab program assembled from parts alike; and one in a part at the
    // part's line.
    const assembled = users.find((p) => p.parts);
    expect(assembled, 'a lab program in parts uses the helper').toBeDefined();
    for (const user of [users.find((p) => !p.parts)!, assembled!]) {
      const broken = { ...user, code: user.code.replace('const slots = new Map<number, Slot>();', 'const slots: number = new Map<number, Slot>();') };
      const errors = typeCheck([broken]);
      expect(errors[0], user.name).toMatch(/^src\/content\/docs\/10-1\/04-single-stage\.mdx:\d+: TS2322 /);
      const line = Number(/:(\d+):/.exec(errors[0]!)![1]);
      const lessonText = fs.readFileSync(path.join(ROOT, user.helper!.file), 'utf8').split('\n');
      expect(lessonText[line - 1]).toContain('const slots = new Map<number, Slot>();');
    }
    const part = assembled!.parts![0]!;
    const firstLine = part.code.split('\n')[0]!;
    const errors = typeCheck([{ ...assembled!, code: assembled!.code.replace(firstLine, `const wrong: number = 'x'; ${firstLine}`) }]);
    expect(errors[0]).toBe(`${part.file}:${part.line + 1}: TS2322 Type 'string' is not assignable to type 'number'.`);
  }, 120_000);

  it('type-checks every complete program against kafkajs 2.2.4 types', () => {
    const errors = typeCheck(programs);
    expect(errors, errors.join('\n')).toEqual([]);
  }, 120_000);
});

describe('lesson programs that answer a lab pass it', () => {
  let clusters: ClusterPool;

  beforeAll(() => {
    process.env.KAFKA_BROKERS = testBrokers().join(',');
    clusters = new ClusterPool();
  });

  afterAll(async () => {
    await clusters?.close();
  });

  for (const program of graded) {
    it(`${program.name} passes lab ${program.lab}${full ? '' : ' (quick plan)'}`, async () => {
      const report = await gradeProgram(clusters, program.lab!, { kind: 'code', code: program.code }, { quick: !full });
      const failed = report.checks.filter((c) => !c.passed).map((c) => `${c.name}: ${c.summary}\n  ${c.evidence.slice(0, 3).join('\n  ')}`);
      expect(report.verdict, `${program.file}:${program.line} on lab ${program.lab}: ${report.message} (seed ${report.seed})\n${failed.join('\n')}`).toBe('pass');
    }, 300_000);
  }
});
