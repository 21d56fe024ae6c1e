/**
 * Crash points live on the wire, outside the program's process (runner/wire/wire-tap.ts): two
 * at-least-once programs that try to see or steer when faults fire never pass, while an innocent
 * grade beside them does.
 * - forge-crash-point.ts takes over the runner's channel, answers any arm with a forged "hit,
 *   transaction open" while idle, and forges hits of every point and action blindly: no arm
 *   reaches it (a send error included: the relay refuses the Produce), and a forged message decides
 *   nothing, so the kill lands between its output and its offset commit.
 * - steer-faults.ts adds a decoy transaction with the batch's offsets and one record before each
 *   real batch, so aimed points find a transaction while the real work has not started: those
 *   faults are not counted as inside a transaction, since that producer never commits records.
 * - wait-out-faults.ts reads the grader's rhythm (a fault follows each wave) and holds each new
 *   wave untouched for 3 s before its work: an aimed point waits for the work wherever it comes,
 *   and the plan's unannounced kill (fault-plan.ts) is armed nowhere, so no timing is safe.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { loadLab } from '../../lab-server/labs/load-lab.ts';
import { createAttempt } from '../../lab-server/runner/attempt.ts';
import type { GradeReport } from '../../src/shared/report.ts';
import { innocentGrade, namespace } from './tenancy-support.ts';
import { testBrokers } from '../support/brokers.ts';

const brokers = testBrokers();

async function gradeAttack(name: string, mode: 'quick' | 'grade'): Promise<{ report: GradeReport; lines: string[] }> {
  const lines: string[] = [];
  const listener = { output: (_i: string, _s: string, line: string) => void lines.push(line), diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };
  const lab = await loadLab('single-stage');
  const code = fs.readFileSync(path.join(ROOT_DIR, `tests/security/attacks/${name}.ts`), 'utf8');
  const report = await createAttempt({ lab, program: { kind: 'code', code }, brokers, control: null, namespace: namespace(name.slice(0, 8)), mode, listener }).grade();
  return { report, lines };
}

const describeReport = (r: GradeReport) => `${r.verdict}: ${r.message}\n${r.faults.map((f) => JSON.stringify(f)).join('\n')}`;

describe('an at-least-once program that steers faults', () => {
  it('forging crash-point answers on the channel: never passes; an innocent grade beside it does', async () => {
    const victim = await innocentGrade(brokers);
    const { report, lines } = await gradeAttack('forge-crash-point', 'quick');
    expect(report.verdict, describeReport(report)).not.toBe('pass');
    // The kill found the real work: the forger wrote a batch twice.
    expect(report.verdict, describeReport(report)).toBe('fail');
    expect(report.checks.find((c) => c.name === 'no-duplicates')?.passed, describeReport(report)).toBe(false);
    // No arm reached it (the plan lives in the relay), so it forged hits blindly; the only hits
    // and transactions are the wire's to report, and it has none: no fault counts as inside one.
    expect(lines.some((l) => l.startsWith('FORGER forged')), lines.slice(-10).join('\n')).toBe(true);
    expect(lines.filter((l) => l.startsWith('FORGER saw an arm'))).toEqual([]);
    expect(report.faults.filter((f) => f.inTransaction === true), describeReport(report)).toEqual([]);
    const innocent = await victim.report;
    expect(innocent.verdict, innocent.message).toBe('pass');
    // Its plan had the unannounced kill: aimed at no point, yet on record for the learner.
    const unannounced = innocent.faults.filter((f) => f.unannounced);
    expect(unannounced, describeReport(innocent)).toHaveLength(1);
    expect(unannounced[0]).toMatchObject({ kind: 'kill', instance: 'i1' });
    expect(unannounced[0]!.crashPoint).toBeUndefined();
    expect(unannounced[0]!.aimedAt).toBeUndefined();
  }, 180_000);

  it('with decoy transactions before each batch: never passes, and says why', async () => {
    const { report, lines } = await gradeAttack('steer-faults', 'grade');
    expect(lines.some((l) => l.includes('STEER decoy transactions so far')), lines.slice(-20).join('\n')).toBe(true);
    expect(report.verdict, describeReport(report)).not.toBe('pass');
    if (report.verdict === 'inconclusive') expect(report.message).toMatch(/never committed one carrying records/);
  }, 240_000);

  it('waiting out each wave before its at-least-once work: never passes', async () => {
    const { report, lines } = await gradeAttack('wait-out-faults', 'quick');
    expect(lines.some((l) => l.startsWith('WAIT held')), lines.slice(-20).join('\n')).toBe(true);
    expect(report.verdict, describeReport(report)).toBe('fail');
    // An aimed kill waited for its point and landed between the output and the offset commit.
    expect(report.checks.find((c) => c.name === 'no-duplicates')?.passed, describeReport(report)).toBe(false);
  }, 180_000);
});
