/** The grader's report as a readable terminal table: ✓/✗ per check and its first evidence lines. */
import type { GradeReport } from '../../../shared/report.ts';
import { ansi } from './ansi.ts';

const EVIDENCE_LINES = 3;

export function formatReport(report: GradeReport): string[] {
  const verdict = {
    pass: ansi.boldGreen('PASS'),
    fail: ansi.boldRed('FAIL'),
    inconclusive: ansi.yellow('INCONCLUSIVE'),
    error: ansi.boldRed('ERROR'),
  }[report.verdict];
  const seconds = (report.stats.durationMs / 1000).toFixed(1);
  const lines = [
    '',
    `${ansi.bold('Report')} ${verdict}  ${report.message}`,
    ansi.dim(`${report.quick ? 'quick grade' : 'grade'} · seed ${report.seed} · ${seconds} s · ${report.faults.length} faults · replay: grade${report.quick ? ' --quick' : ''} --seed ${report.seed}`),
  ];
  const nameWidth = Math.max(0, ...report.checks.map((c) => c.name.length));
  for (const check of report.checks) {
    const mark = check.passed ? ansi.green('✓') : ansi.red('✗');
    lines.push(`  ${mark} ${check.name.padEnd(nameWidth)}  ${check.summary}`);
    for (const evidence of check.evidence.slice(0, EVIDENCE_LINES)) lines.push(ansi.dim(`      ${evidence}`));
    if (check.evidence.length > EVIDENCE_LINES) lines.push(ansi.dim(`      … ${check.evidence.length - EVIDENCE_LINES} more in the report below`));
  }
  const s = report.stats;
  lines.push(
    ansi.dim(`  inputs ${s.inputs} (+${s.abortedInputs} aborted) · outputs ${s.outputs} · aborted writes ${s.abortedRecords} · restarts ${s.restarts} · self-exits ${s.selfExits}`),
    '',
  );
  return lines;
}
