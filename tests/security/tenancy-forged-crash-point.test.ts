/**
 * A forged crash-point answer ("hit, transaction open" at a safe moment, from a program without
 * transactions) is checked against the broker (LSO below the high watermark) and not believed:
 * the grade cannot pass on it. A concurrent innocent grade passes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { createAttempt } from '../../lab-server/runner/attempt.ts';
import { innocentGrade, namespace } from './tenancy-support.ts';

const brokers = inject('brokers');
const lines: string[] = [];
const quiet = { output: (_instance: string, _stream: string, line: string) => void lines.push(line), diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };

describe('a forged crash-point hit', () => {
  it('makes a grade inconclusive at worst, never a pass', async () => {
    const victim = await innocentGrade(brokers);
    const lab = await loadLab('single-stage');
    const code = fs.readFileSync(path.join(ROOT_DIR, 'tests/security/attacks/forge-crash-point.ts'), 'utf8');
    const forged = await createAttempt({ lab, program: { kind: 'code', code }, brokers, control: null, namespace: namespace('forger'), mode: 'quick', listener: quiet }).grade();
    // The attack really forged (it found the channel and answered an armed point)...
    expect(lines.filter((l) => l.startsWith('FORGER answering')).length, lines.slice(-20).join('\n')).toBeGreaterThan(0);
    // ...and was not believed.
    expect(forged.verdict, forged.message).not.toBe('pass');
    const disbelieved = forged.faults.filter((f) => /broker showed none/.test(f.note ?? ''));
    expect(disbelieved.length, JSON.stringify(forged.faults)).toBeGreaterThan(0);
    expect(disbelieved.every((f) => f.inTransaction === false)).toBe(true);
    const report = await victim.report;
    expect(report.verdict, report.message).toBe('pass');
  }, 150_000);
});
