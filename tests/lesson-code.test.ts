/**
 * The lessons' code is proven, not just shown (issue #16):
 *
 * - every complete program of a lesson (a fenced block with `program` in its meta) type-checks as
 *   strict TypeScript against kafkajs's own types;
 * - every program that names a lab (`lab=<id>`) is graded against that lab by the same grader as
 *   `kafkaiq check` (gradeProgram) and must PASS.
 *
 * Grades use the lab's quick fault plan to keep CI time down; each of these programs was also
 * graded by hand with the full plan (see AUTHORING.md, "Code in lessons"). KAFKAIQ_LESSON_FULL=1
 * grades them with the full plan instead. Snippets (blocks without `program`) are not checked.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ClusterPool } from '../lab-server/broker/cluster-pool.ts';
import { listLabIds } from '../lab-server/labs/load-lab.ts';
import { gradeProgram } from '../lab-server/runner/check-labs.ts';
import fs from 'node:fs';
import path from 'node:path';
import { lessonPrograms, ROOT, typeCheck } from './support/lesson-programs.ts';

const programs = lessonPrograms();
const graded = programs.filter((p) => p.lab);
const full = process.env.KAFKAIQ_LESSON_FULL === '1';

describe('lesson programs', () => {
  it('finds the marked programs, and every lab they name exists', () => {
    // The course marks at least the lab answers of lessons 10.1.4, 10.1.6.1 and 10.1.9.3.
    expect(programs.length).toBeGreaterThanOrEqual(15);
    expect(graded.map((p) => p.lab)).toEqual(expect.arrayContaining(['single-stage', 'fan-out', 'http-idempotency']));
    const labs = listLabIds();
    for (const program of graded) expect(labs, `${program.name} names lab=${program.lab}`).toContain(program.lab);
    for (const program of programs) {
      expect(['ts', 'typescript'], `${program.name}: a program block must be TypeScript`).toContain(program.lang);
      expect(program.code, `${program.name}: a complete program imports what it uses`).toMatch(/^import /m);
    }
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
    // A type error in the helper part is reported at the helper's line in lesson 10.1.4.
    const user = users[0]!;
    const broken = { ...user, code: user.code.replace('const slots = new Map<number, Slot>();', 'const slots: number = new Map<number, Slot>();') };
    const errors = typeCheck([broken]);
    expect(errors[0]).toMatch(/^src\/content\/docs\/10-1\/04-single-stage\.mdx:\d+: TS2322 /);
    const line = Number(/:(\d+):/.exec(errors[0]!)![1]);
    const lessonText = fs.readFileSync(path.join(ROOT, user.helper!.file), 'utf8').split('\n');
    expect(lessonText[line - 1]).toContain('const slots = new Map<number, Slot>();');
  }, 120_000);

  it('type-checks every complete program against kafkajs 2.2.4 types', () => {
    const errors = typeCheck(programs);
    expect(errors, errors.join('\n')).toEqual([]);
  }, 120_000);
});

describe('lesson programs that answer a lab pass it', () => {
  let clusters: ClusterPool;

  beforeAll(() => {
    process.env.KAFKA_BROKERS = inject('brokers').join(',');
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
