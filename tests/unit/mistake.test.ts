/**
 * Broken variants as mistakes (src/shared/mistake.ts): anchored edits applied to a solution, and
 * every .diff variant in labs/ materialised and type-checked as the program it grades.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadBrokenVariants, loadLab } from '../../lab-server/labs/load-lab.ts';
import { applyMistake, describeVariant, parseMistake } from '../../src/shared/mistake.ts';
import { labFixtures } from '../../lab-server/runner/check-labs.ts';
import { typeCheckPrograms } from '../support/type-check.ts';
import { repositoryLabIds } from '../support/labs.ts';

const SOLUTION = ['// the solution', "import x from 'y';", '', 'const a = 1;', 'const b = 2;', 'send(a);', 'commit(b);', 'const a2 = 1;', 'const b2 = 2;', ''].join('\n');

const mistake = (...hunkLines: string[]) => ['// expect-fail: no-duplicates', '// Commits before it sends.', '--- solution.ts', '+++ broken/x.ts', ...hunkLines, ''].join('\n');

describe('a mistake', () => {
  it('is its solution with each anchored edit applied, under its own comment lines', () => {
    const m = parseMistake(mistake('@@ -5,3 +5,3 @@', ' const b = 2;', '-send(a);', '-commit(b);', '+commit(b);', '+send(a);'), 'x.diff');
    const program = applyMistake(m, SOLUTION, 'x.diff');
    expect(program.split('\n').slice(0, 3)).toEqual(['// expect-fail: no-duplicates', '// Commits before it sends.', '// the solution']);
    expect(program).toContain('const b = 2;\ncommit(b);\nsend(a);\nconst a2');
    expect(program.endsWith('\n')).toBe(true);
  });

  it('ignores the numbers after @@, so an edit elsewhere in the solution leaves it as it was', () => {
    const m = parseMistake(mistake('@@', ' send(a);', '-commit(b);', '+commit(a);'), 'x.diff');
    const moved = SOLUTION.replace("import x from 'y';", "import x from 'y';\nimport z from 'w';\n// more lines above");
    expect(applyMistake(m, moved, 'x.diff')).toContain('send(a);\ncommit(a);');
  });

  it('names the variant and the hunk when the solution changed under its anchor', () => {
    const m = parseMistake(mistake('@@', ' send(a);', '-commit(b);', '+commit(a);'), 'labs/l/broken/x.diff');
    expect(() => applyMistake(m, SOLUTION.replace('commit(b);', 'await commit(b);'), 'labs/l/broken/x.diff')).toThrow(/labs\/l\/broken\/x\.diff: hunk 1 \(from "send\(a\);"\) no longer matches solution\.ts/);
  });

  it('refuses an anchor that matches more than once, and hunks that overlap', () => {
    const twice = parseMistake(mistake('@@', '-const a = 1;', '+const a = 3;'), 'x.diff');
    expect(applyMistake(twice, SOLUTION, 'x.diff')).toContain('const a = 3;');
    const ambiguous = parseMistake(mistake('@@', ' const b = 2;', '-send(a);', '+send(b);'), 'x.diff');
    expect(applyMistake(ambiguous, SOLUTION, 'x.diff')).toContain('send(b);');
    const repeated = SOLUTION + 'const b = 2;\nsend(a);\n';
    expect(() => applyMistake(ambiguous, repeated, 'x.diff')).toThrow(/hunk 1 \(from "const b = 2;"\) matches solution\.ts 2 times: add context lines/);
    const overlap = parseMistake(mistake('@@', ' const b = 2;', '-send(a);', '+send(b);', '@@', ' send(a);', '-commit(b);', '+commit(a);'), 'x.diff');
    expect(() => applyMistake(overlap, SOLUTION, 'x.diff')).toThrow(/hunks 1 and 2 overlap/);
  });

  it('refuses a file that is not one: no expect-fail, no solution named, a stray line, an edit that changes nothing', () => {
    expect(() => parseMistake(['--- solution.ts', '+++ b', '@@', '-a', '+b'].join('\n'), 'x.diff')).toThrow(/must start with '\/\/ expect-fail/);
    expect(() => parseMistake(['// expect-fail: no-loss', '--- lab.ts', '+++ b', '@@', '-a', '+b'].join('\n'), 'x.diff')).toThrow(/changes the lab's solution\.ts/);
    expect(() => parseMistake(['// expect-fail: no-loss', 'oops', '--- solution.ts', '+++ b', '@@', '-a', '+b'].join('\n'), 'x.diff')).toThrow(/line 2: before '--- <solution file>'/);
    expect(() => parseMistake(mistake('@@', ' a', '*b'), 'x.diff')).toThrow(/starts with ' ', '-' or '\+'/);
    expect(() => parseMistake(mistake('@@', ' a'), 'x.diff')).toThrow(/changes nothing/);
    expect(() => parseMistake(mistake('@@', '+a'), 'x.diff')).toThrow(/has no anchor/);
  });
});

describe('a whole-program variant', () => {
  it('must say why it is not a mistake made to the solution', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiq-whole-'));
    try {
      fs.mkdirSync(path.join(dir, 'broken'));
      fs.writeFileSync(path.join(dir, 'broken', 'x.ts'), '// expect-fail: no-loss\n// Skips every batch.\nconsole.log(1);\n');
      expect(() => loadBrokenVariants('l', dir)).toThrow(/labs\/l\/broken\/x\.ts is a whole program: make it broken\/x\.diff/);
      fs.writeFileSync(path.join(dir, 'broken', 'x.ts'), '// expect-fail: no-loss\n// Skips every batch.\n// Whole program: no transactions at all.\nconsole.log(1);\n');
      expect(loadBrokenVariants('l', dir).map((b) => [b.name, b.base, b.expectFail])).toEqual([['x', null, 'no-loss']]);
      fs.writeFileSync(path.join(dir, 'broken', 'x.diff'), '// expect-fail: no-loss\n--- solution.ts\n+++ b\n@@\n-a\n+b\n');
      expect(() => loadBrokenVariants('l', dir)).toThrow(/has both x\.ts and x\.diff/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a variant only the full plan catches', () => {
  it('says why in a full-plan line, kept out of what the mistake is, and CI grades it on the full plan only', async () => {
    const text = ['// expect-fail: no-loss', '// Drops the batch.', '// full-plan: only the full plan restarts the broker.', '--- solution.ts', '+++ b', '@@', '-a', '+b', ''].join('\n');
    expect(describeVariant(text)).toMatchObject({ about: 'Drops the batch.', fullPlan: 'only the full plan restarts the broker.' });
    expect(describeVariant(mistake('@@', '-send(a);', '+send(b);')).fullPlan).toBeNull();
    const plans = new Map((await labFixtures(repositoryLabIds())).filter((f) => f.program.startsWith('broken/')).map((f) => [`${f.lab}/${f.program}`, f.failPlan]));
    expect(plans.get('multi-stage/broken/enrich-offsets-after-commit')).toBe('full');
    expect(plans.get('copy/broken/read-uncommitted')).toBe('quick');
  });
});

describe("every lab's mistakes", () => {
  it('materialise, and each program as graded type-checks', async () => {
    const programs = new Map<string, string>();
    for (const id of repositoryLabIds()) {
      const lab = await loadLab(id);
      for (const variant of lab.broken) if (variant.base) programs.set(`${id}--${variant.name}.ts`, variant.source);
    }
    expect(programs.size, 'labs/ declares mistakes').toBeGreaterThan(50);
    const { errors, other } = typeCheckPrograms('mistakes', programs);
    expect([...errors.map((e) => `${e.file}:${e.line}: ${e.code} ${e.message}`), ...other]).toEqual([]);
  }, 60_000);
});
