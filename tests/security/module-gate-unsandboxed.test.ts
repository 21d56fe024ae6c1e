/**
 * Issue 27, class 8, without the sandbox (a learner's own machine, KAFKAIQ_SANDBOX=off): Node's
 * permission model does not gate node:sqlite, so the module gate alone must refuse it. The attack
 * runs with exactly the command line the runner gives an unsandboxed program (commandLine); the
 * grades of this run stay sandboxed, and beside the attack another learner's quick grade passes.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { compileProgram } from '../../lab-server/runner/program/compile.ts';
import { commandLine, DEFAULT_INSTANCE_LIMITS } from '../../lab-server/runner/program/program-instance.ts';
import { createWorkDir } from '../../lab-server/runner/program/work-dirs.ts';
import { expectEveryWayRefused } from './module-gate-support.ts';
import { innocentGrade, type AttackResult } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

/** Runs the attack unsandboxed until it prints its RESULT line; its output as the attempt sink would show it. */
async function runUnsandboxed(name: string): Promise<AttackResult & { output: string[] }> {
  const dir = createWorkDir();
  try {
    const code = fs.readFileSync(path.join(ROOT_DIR, 'tests/security/attacks', `${name}.ts`), 'utf8');
    const compiled = await compileProgram(code, dir);
    const [command, ...args] = commandLine({ kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: dir }, DEFAULT_INSTANCE_LIMITS);
    const child = spawn(command!, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    const result = await new Promise<AttackResult | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), 30_000);
      readline.createInterface({ input: child.stdout! }).on('line', (line) => {
        output.push(`i1 stdout ${line}`);
        if (line.startsWith('RESULT ')) {
          clearTimeout(timer);
          resolve(JSON.parse(line.slice(7)) as AttackResult);
        }
      });
      readline.createInterface({ input: child.stderr! }).on('line', (line) => output.push(`i1 stderr ${line}`));
      child.once('exit', () => resolve(null));
    });
    child.kill('SIGKILL');
    if (!result) throw new Error(`attack ${name} printed no RESULT unsandboxed:\n${output.slice(-30).join('\n')}`);
    return { ...result, output };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('the run-time module gate, unsandboxed', () => {
  it('refuses node:sqlite, v8 and vm however they are loaded, and a hook in front of it', async () => {
    const victim = await innocentGrade(brokers);
    const attack = await runUnsandboxed('load-refused-builtins');
    expectEveryWayRefused(attack);
    const report = await victim.report;
    expect(report.verdict, report.message).toBe('pass');
  }, 180_000);
});
