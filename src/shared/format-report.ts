import type { GradeReport } from './report.ts';
import { landingNote } from './fault-landing.ts';

export interface FormatOptions {
  /** ANSI colours (terminals, xterm). */
  color?: boolean;
  /** Evidence lines shown per check. */
  evidenceLines?: number;
}

const VERDICT_LABEL: Record<GradeReport['verdict'], string> = { pass: 'PASS', fail: 'FAIL', inconclusive: 'INCONCLUSIVE', error: 'ERROR' };

/** The human form of a report: the same table in the CLI and in the browser terminal. */
export function formatReport(report: GradeReport, options: FormatOptions = {}): string {
  const { color = false, evidenceLines = 3 } = options;
  const paint = (code: string, text: string) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const green = (t: string) => paint('32', t);
  const red = (t: string) => paint('31', t);
  const yellow = (t: string) => paint('33', t);
  const dim = (t: string) => paint('2', t);
  const bold = (t: string) => paint('1', t);
  const verdictColour = report.verdict === 'pass' ? green : report.verdict === 'fail' ? red : yellow;
  const s = report.stats;
  const lines = [
    `${bold(verdictColour(VERDICT_LABEL[report.verdict]))}  ${report.lab}${report.quick ? ' (quick)' : ''}  seed ${report.seed}  ${(s.durationMs / 1000).toFixed(1)} s`,
    report.message,
    dim(
      `inputs ${s.inputs} committed + ${s.abortedInputs} aborted · outputs ${s.outputs} · aborted output records ${s.abortedRecords} · restarts ${s.restarts}${s.selfExits ? ` (${s.selfExits} on its own)` : ''}` +
        (s.outputBlockedMs ? ` · output blocked ${(s.outputBlockedMs / 1000).toFixed(1)} s by stopped instances' transactions` : ''),
    ),
    '',
  ];
  const width = Math.max(10, ...report.checks.map((c) => c.name.length));
  for (const check of report.checks) {
    lines.push(`${check.passed ? green('✓') : red('✗')} ${check.name.padEnd(width)}  ${check.summary}`);
    if (!check.passed) for (const e of check.evidence.slice(0, evidenceLines)) lines.push(dim(`    ${e}`));
    if (!check.passed && check.evidence.length > evidenceLines) lines.push(dim(`    … ${check.evidence.length - evidenceLines} more`));
  }
  if (report.faults.length) {
    lines.push('', 'Faults:');
    for (const f of report.faults) {
      lines.push(
        dim(`  +${(f.atMs / 1000).toFixed(1).padStart(5)} s  ${f.kind.padEnd(14)} ${f.instance.padEnd(7)} ${f.crashPoint ?? ''}${f.inTransaction ? ' [open txn]' : ''}${landingNote(f)}${f.note ? `  ${f.note}` : ''}`),
      );
    }
  }
  return lines.join('\n');
}
