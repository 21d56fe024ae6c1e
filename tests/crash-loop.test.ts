/**
 * A program that crashes at every start (single-stage's broken/random-transactional-id: the broker
 * refuses any transactional id but the attempt's own, and the program exits) is restarted by the
 * supervisor until it has exited 15 times in a row, then no more. From then on nothing of it runs
 * and its output cannot change: the grade is judged at once, instead of waiting out its time limit
 * and an "overtime" for a program "still keeping up".
 */
import { describe, expect, it } from 'vitest';
import type { SessionListener } from '../lab-server/runner/contract.ts';
import { gradeProgram } from '../lab-server/runner/check-labs.ts';
import { MAX_SELF_RESTARTS } from '../lab-server/runner/program/supervisor.ts';
import { brokenProgram } from './support/broken-program.ts';
import { useGradingCluster } from './support/kafka.ts';

const cluster = useGradingCluster();

/** The grader's own lines, each with when it came. */
function systemLines(lines: { at: number; line: string }[]): SessionListener {
  return {
    output: (_instance, stream, line) => void (stream === 'system' && lines.push({ at: Date.now(), line })),
    diagnostics: () => {},
    progress: () => {},
    state: () => {},
    fault: () => {},
  };
}

describe('a program in a crash loop', () => {
  it('is judged as soon as the supervisor gives up on it, not at its time limit', async () => {
    const lines: { at: number; line: string }[] = [];
    const code = brokenProgram('single-stage', 'random-transactional-id');
    const report = await gradeProgram(cluster(), 'single-stage', { kind: 'code', code }, { quick: true, seed: 5, listener: systemLines(lines) });
    const ended = Date.now();
    const why = `${report.message}\n${lines.map((l) => l.line).join('\n')}`;
    expect(report.verdict, why).toBe('fail');
    expect(report.checks.filter((c) => !c.passed).map((c) => c.name), why).toContain('no-loss');
    expect(report.stats.selfExits, why).toBeGreaterThanOrEqual(MAX_SELF_RESTARTS);
    expect(lines.some((l) => l.line.startsWith('Time limit of')), why).toBe(false);
    const gaveUp = lines.find((l) => l.line.startsWith('The program stopped restarting'));
    expect(gaveUp, why).toBeDefined();
    // Stopping and verifying what little is there takes seconds.
    expect(ended - gaveUp!.at, why).toBeLessThan(10_000);
  }, 120_000);
});
