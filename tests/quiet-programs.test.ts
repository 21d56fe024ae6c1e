/**
 * What a learner sees of a correct program, on the real broker: its Run prints no error line
 * (kafkajs's retriable protocol errors are retries, not errors), the grader counts faults as
 * "fault k/N" of the plan, a fault the learner fires is "your fault", and a lab whose only output
 * is a database has no output log to judge.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LABS_DIR } from '../lab-server/core/paths.ts';
import { loadLab } from '../lab-server/labs/load-lab.ts';
import { createAttempt } from '../lab-server/runner/attempt.ts';
import type { SessionListener } from '../lab-server/runner/contract.ts';
import { namespace } from './security/tenancy-support.ts';
import { brokenProgram } from './support/broken-program.ts';
import { testBrokers } from './support/brokers.ts';

const brokers = testBrokers();

function collecting(lines: string[]): SessionListener {
  return {
    output: (instance, stream, line) => void lines.push(`${instance} ${stream} ${line}`),
    diagnostics: () => {},
    progress: () => {},
    state: () => {},
    fault: () => {},
  };
}

const solution = (lab: string) => fs.readFileSync(path.join(LABS_DIR, lab, 'solution.ts'), 'utf8');

describe('a correct program, as the learner sees it', () => {
  for (const labId of ['single-stage', 'copy']) {
    it(`${labId}: the reference solution's Run prints no error line, and a fault the learner fires is theirs`, async () => {
      const lab = await loadLab(labId);
      const lines: string[] = [];
      const attempt = createAttempt({ lab, program: { kind: 'code', code: solution(labId) }, brokers, control: null, namespace: namespace('quiet'), mode: 'run', listener: collecting(lines) });
      const done = attempt.run();
      // Long enough for many transactions (each a CONCURRENT_TRANSACTIONS retry away from the last).
      const until = Date.now() + 30_000;
      while (Date.now() < until && lines.filter((l) => l.startsWith('i1 ')).length < 3) await new Promise((r) => setTimeout(r, 200));
      await new Promise((r) => setTimeout(r, 8_000));
      const beforeFault = [...lines];
      await attempt.manualFault('kill');
      await new Promise((r) => setTimeout(r, 2_000));
      attempt.requestStop();
      await done;
      await attempt.deleteTopics();
      const programLines = beforeFault.filter((l) => l.startsWith('i1 '));
      expect(programLines.length, lines.slice(-20).join('\n')).toBeGreaterThan(0);
      expect(programLines.filter((l) => / stderr |ERROR/.test(l))).toEqual([]);
      const faultLines = lines.filter((l) => /fault/.test(l) && l.startsWith('grader '));
      expect(faultLines.some((l) => /your fault: kill i1/.test(l)), faultLines.join('\n')).toBe(true);
      expect(faultLines.filter((l) => /fault \d+\/0/.test(l))).toEqual([]);
    }, 90_000);
  }

  it('counts a grade\'s faults as k of the plan\'s N, retries included', async () => {
    const lab = await loadLab('single-stage');
    const lines: string[] = [];
    const attempt = createAttempt({ lab, program: { kind: 'code', code: solution('single-stage') }, brokers, control: null, namespace: namespace('counted'), mode: 'quick', seed: 1006, listener: collecting(lines) });
    const report = await attempt.grade();
    await attempt.deleteTopics();
    const counted = lines.map((l) => /fault (\d+)\/(\d+):/.exec(l)).filter((m): m is RegExpExecArray => m !== null);
    expect(counted.length).toBeGreaterThan(0);
    const planned = Number(counted[0]![2]);
    // The lab's listed faults and the plan's unannounced kill (fault-plan.ts).
    expect(planned).toBe(lab.definition.faults.quick.length + 1);
    for (const m of counted) {
      expect(Number(m[2])).toBe(planned);
      expect(Number(m[1])).toBeGreaterThanOrEqual(1);
      expect(Number(m[1])).toBeLessThanOrEqual(planned);
    }
    expect(report.verdict).toBe('pass');
  }, 180_000);

  it('db-sink: a lab whose only output is a database reports no output log check', async () => {
    const lab = await loadLab('db-sink');
    const attempt = createAttempt({ lab, program: { kind: 'code', code: solution('db-sink') }, brokers, control: null, namespace: namespace('dbsink'), mode: 'quick', listener: collecting([]) });
    const report = await attempt.grade();
    await attempt.deleteTopics();
    expect(report.checks.map((c) => c.name)).not.toContain('output-log-intact');
    expect(report.checks.map((c) => c.name)).toEqual(lab.definition.checks);
    expect(report.verdict).toBe('pass');
  }, 180_000);

  it('db-sink: a row written twice is placed after the fault that came before the repeat', async () => {
    const lab = await loadLab('db-sink');
    const code = brokenProgram('db-sink', 'plain-insert');
    const attempt = createAttempt({ lab, program: { kind: 'code', code }, brokers, control: null, namespace: namespace('dbdup'), mode: 'quick', seed: 1001, listener: collecting([]) });
    const report = await attempt.grade();
    await attempt.deleteTopics();
    const duplicates = report.checks.find((c) => c.name === 'no-duplicate-effects')!;
    expect(duplicates.passed).toBe(false);
    expect(duplicates.evidence[0]).toMatch(/applied 2 times \(written at \+\d+\.\d s, \+\d+\.\d s; the repeat came after fault \w+ on i\d/);
  }, 180_000);
});
