/**
 * Issue 27, class 5: a program whose output lines and output records' keys and values carry ANSI
 * colour, OSC 0 / 52 / 8 and terminal queries (tests/security/attacks/hostile-strings.ts), graded
 * by the real CLI (`npx kafkaiq grade --verbose`): the bytes it writes carry no escape sequence at
 * all (piped, so no colours either), the program's text is there, escaped, and the report still
 * says FAIL. Beside it, another learner's quick grade passes. The workbench terminal's side (a real
 * xterm fed the same strings) is tests/unit/program-strings.test.ts.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { innocentGrade } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

function cli(args: string[]): Promise<{ code: number | null; stdout: Buffer; stderr: Buffer }> {
  const child = spawn(process.execPath, [path.join(ROOT_DIR, 'bin/kafkaiq.mjs'), ...args], {
    cwd: ROOT_DIR,
    env: { ...process.env, KAFKA_BROKERS: brokers.join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.on('data', (d: Buffer) => err.push(d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err) })));
}

describe('program-controlled strings on the CLI', () => {
  it('reach the terminal escaped: no ANSI, OSC or query byte, and FAIL stays FAIL', async () => {
    const victim = await innocentGrade(brokers);
    const { code, stdout, stderr } = await cli(['grade', 'single-stage', 'tests/security/attacks/hostile-strings.ts', '--quick', '--verbose']);
    const text = stdout.toString('utf8');
    expect(code, `${text.slice(-3000)}\n${stderr.toString().slice(-2000)}`).toBe(1);
    for (const out of [stdout, stderr]) {
      // ESC, BEL, CR, and the 8-bit CSI/OSC/ST (as UTF-8: C2 9B, C2 9D, C2 9C): none.
      expect(out.includes(0x1b), 'ESC').toBe(false);
      expect(out.includes(0x07), 'BEL').toBe(false);
      expect(out.includes(0x0d), 'CR').toBe(false);
      for (const c1 of ['\x9b', '\x9d', '\x9c', '\x90']) expect(out.includes(Buffer.from(c1, 'utf8')), JSON.stringify(c1)).toBe(false);
    }
    // The program's lines were shown, escaped.
    expect(text).toContain('HOSTILE \\x1b]52;c;');
    expect(text).toContain('HOSTILE \\r\\x1b[2K\\x1b[1;32mPASS');
    expect(text).toContain('HOSTILE \\x9b6n');
    // The report: its verdict line is the first line starting with a verdict, and it is FAIL.
    const verdict = text.split('\n').find((l) => /^(PASS|FAIL|INCONCLUSIVE|ERROR) /.test(l));
    expect(verdict, text.slice(-3000)).toMatch(/^FAIL {2}single-stage \(quick\)/);
    // Evidence quoting the records' keys is escaped too.
    expect(text.split(/^FAIL /m)[1] ?? '', text.slice(-3000)).toMatch(/\\x1b|\\r/);
    const report = await victim.report;
    expect(report.verdict, report.message).toBe('pass');
  }, 240_000);
});
