import fs from 'node:fs';
import type { KafkaCluster } from '../broker/cluster.ts';
import { describeError } from '../core/errors.ts';
import { loadLab } from '../labs/load-lab.ts';
import type { GradeReport } from '../../src/shared/report.ts';
import type { SessionListener } from './contract.ts';
import { LabAttempt } from './lab-attempt.ts';

export interface FixtureResult {
  lab: string;
  program: string;
  expected: string;
  got: string;
  ok: boolean;
  seconds: number;
}

const silent: SessionListener = { output: () => {}, diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };

export async function gradeFile(cluster: KafkaCluster, labId: string, file: string, options: { quick?: boolean; seed?: number; listener?: SessionListener } = {}): Promise<GradeReport> {
  const lab = await loadLab(labId);
  const attempt = new LabAttempt({
    lab,
    program: { kind: 'code', code: fs.readFileSync(file, 'utf8') },
    brokers: cluster.brokers,
    control: cluster.control,
    namespace: `kiq-check-${labId}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`,
    mode: options.quick ? 'quick' : 'grade',
    seed: options.seed,
    listener: options.listener ?? silent,
  });
  try {
    return await attempt.grade();
  } finally {
    await attempt.deleteTopics();
  }
}

/**
 * The fixture matrix every lab must satisfy (as Exercism does for its exercises): the solution
 * passes, the starter fails, each broken variant fails on the check its first line names.
 */
export async function checkLabs(labIds: string[], cluster: KafkaCluster, options: { quick?: boolean; log?: (line: string) => void } = {}): Promise<boolean> {
  const log = options.log ?? (() => {});
  const results: FixtureResult[] = [];
  for (const id of labIds) {
    const lab = await loadLab(id);
    const fixtures = [
      { program: 'solution', file: lab.solutionFile, expect: 'pass' as const, check: undefined as string | undefined },
      { program: 'starter', file: lab.starterFile, expect: 'fail' as const, check: undefined },
      ...lab.broken.map((b) => ({ program: `broken/${b.name}`, file: b.file, expect: 'fail' as const, check: b.expectFail as string })),
    ];
    for (const fixture of fixtures) {
      const started = Date.now();
      let got: string;
      let ok: boolean;
      try {
        const report = await gradeFile(cluster, id, fixture.file, { quick: options.quick });
        const failed = report.checks.filter((c) => !c.passed).map((c) => c.name);
        got = report.verdict === 'fail' ? `fail (${failed.join(', ')})` : report.verdict;
        ok = fixture.expect === 'pass' ? report.verdict === 'pass' : report.verdict === 'fail' && (!fixture.check || failed.includes(fixture.check));
        if (!ok && report.verdict === 'error') got += `: ${report.message}`;
      } catch (err) {
        got = `error: ${describeError(err)}`;
        ok = false;
      }
      const expected = fixture.expect === 'pass' ? 'pass' : `fail${fixture.check ? ` (${fixture.check})` : ''}`;
      const result = { lab: id, program: fixture.program, expected, got, ok, seconds: (Date.now() - started) / 1000 };
      results.push(result);
      log(`${ok ? '✓' : '✗'} ${id.padEnd(20)} ${fixture.program.padEnd(34)} expected ${expected.padEnd(34)} got ${got}  (${result.seconds.toFixed(1)} s)`);
    }
  }
  const bad = results.filter((r) => !r.ok);
  log(bad.length ? `\n${bad.length} of ${results.length} fixtures are wrong.` : `\nAll ${results.length} fixtures graded as expected.`);
  return bad.length === 0;
}
