/**
 * Compiling a learner's program (lab-server/runner/program/compile.ts): a syntax error names its
 * line and column without server paths; a type error does not block a run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { compileProgram } from '../../lab-server/runner/program/compile.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';

describe('compiling learner programs', () => {
  it('reports a syntax error with its line and column, without server paths', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-test-'));
    const failure = await compileProgram('const x = ;\n', dir).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(KafkaIqError);
    expect((failure as KafkaIqError).code).toBe('COMPILE_FAILED');
    expect((failure as KafkaIqError).message).toMatch(/^program\.ts:1:11: /);
    expect((failure as KafkaIqError).message).not.toContain(ROOT_DIR);
  });

  it('type errors do not block a run', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-test-'));
    const compiled = await compileProgram("const n: number = 'not a number';\nconsole.log(n);\n", dir);
    expect(fs.existsSync(compiled.file)).toBe(true);
  });
});
