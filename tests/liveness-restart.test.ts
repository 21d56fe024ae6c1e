/**
 * A wedge must not hide a program's other bug. The program is single-stage's solution with two
 * mistakes (broken/never-aborts-failed-send and broken/offsets-after-commit): a failed send it never
 * aborts (every later transaction() throws, and its crash handler keeps it up: it is stuck) and
 * input offsets committed after the transaction (a kill at after:commit duplicates a batch). On quick
 * seed 1006 the plan's first fault is that send-error, at +1 s. Before the grader restarted a
 * stuck program, the later faults all fell back on the idle process and the grade failed keeps-up
 * only, never showing the duplicates. Now: keeps-up records the stall, the grader restarts the
 * stuck instance as a liveness probe would, and the kill at after:commit lands and exposes them.
 */
import { describe, expect, it } from 'vitest';
import { gradeProgram } from '../lab-server/runner/check-labs.ts';
import { useGradingCluster } from './support/kafka.ts';
import { withMistakes } from './support/broken-program.ts';

const cluster = useGradingCluster();

describe('a program stuck after a failed send', () => {
  it('is restarted once keeps-up has its stall, so the owed kill at after:commit still exposes its duplicates', async () => {
    const code = withMistakes('single-stage', 'never-aborts-failed-send', 'offsets-after-commit');
    const report = await gradeProgram(cluster(), 'single-stage', { kind: 'code', code }, { quick: true, seed: 1006 });
    const failed = report.checks.filter((c) => !c.passed).map((c) => c.name);
    const why = `${report.message}\n${JSON.stringify(report.faults)}`;
    expect(report.verdict, why).toBe('fail');
    // The wedge is a finding, and so are the duplicates it would hide without the liveness restart.
    expect(failed, why).toEqual(expect.arrayContaining(['keeps-up', 'no-duplicates']));
    expect(report.faults[0], why).toMatchObject({ kind: 'send-error' });
    const restart = report.timeline.find((e) => e.kind === 'exit' && e.detail?.includes('liveness restart'));
    expect(restart, JSON.stringify(report.timeline)).toBeDefined();
    // The kill that exposes the duplicates reached its point in the restarted program.
    const later = report.faults.filter((f) => f.atMs > restart!.atMs);
    expect(later.some((f) => f.kind === 'kill' && f.crashPoint === 'after:commit' && f.landed === 'at-point'), why).toBe(true);
  }, 150_000);
});
