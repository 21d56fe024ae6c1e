/**
 * The grader's report in the xterm terminal: the shared report text (src/shared/format-report.ts,
 * the same wording, check table and fault list as the CLI and the class view) in the terminal's
 * colours, wrapped at word boundaries to its width.
 */
import type { GradeReport } from '../../../shared/report.ts';
import { renderReport, type Paint, type Tone } from '../../../shared/format-report.ts';
import { ansi } from './ansi.ts';

const TONE: Record<Tone, (text: string) => string> = {
  plain: (text) => text,
  pass: ansi.green,
  fail: ansi.red,
  warn: ansi.yellow,
  dim: ansi.dim,
};
const STRONG: Record<Tone, (text: string) => string> = {
  plain: ansi.bold,
  pass: ansi.boldGreen,
  fail: ansi.boldRed,
  warn: (text) => ansi.bold(ansi.yellow(text)),
  dim: ansi.bold,
};

export const xtermPaint: Paint = (text, tone, strong) => (strong ? STRONG : TONE)[tone](text);

/** The report's lines, between blank lines that set it apart from the program's output and the prompt. */
export function formatReport(report: GradeReport, columns?: number): string[] {
  return ['', ...renderReport(report, xtermPaint, { width: columns }), ''];
}
