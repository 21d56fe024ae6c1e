/**
 * The human form of a grade report, one for every place that shows it: the CLI (`kafkaiq grade`),
 * the workbench terminal and the instructor's class view. reportLines decides the wording, the
 * check table and the fault list once, as lines of spans that say what they mean (a tone), not
 * how they look; each place renders those spans with its own Paint: ANSI for the CLI, the
 * terminal's own colours for xterm, escaped HTML for the class view.
 *
 * Pure (no I/O, no zod), so the browser's islands import it too.
 */
import type { GradeReport } from './report.ts';
import { landingNote } from './fault-landing.ts';
import { showControlCharacters } from './sanitise.ts';

/**
 * Reports carry text the learner's program chose (record keys and values in evidence, notes): every
 * span is sanitised by the one sanitiser (sanitise.ts) before a renderer adds its colours.
 */
export { showControlCharacters };

/** What a span means; each renderer picks its colour. */
export type Tone = 'plain' | 'pass' | 'fail' | 'warn' | 'dim';

export interface Span {
  text: string;
  tone: Tone;
  /** Emphasised (the verdict). */
  strong?: boolean;
}

export interface ReportLine {
  spans: Span[];
  /** Columns a wrapped continuation of this line is indented by. */
  hang: number;
}

export interface LayoutOptions {
  /** Evidence lines shown per failed check. Default 3. */
  evidenceLines?: number;
  /**
   * Wrap lines longer than this many columns, at spaces only: a word longer than the width stays
   * whole on its own line. Default: no wrapping.
   */
  width?: number;
}

/** Turns one span into the renderer's text (escape sequences, markup). */
export type Paint = (text: string, tone: Tone, strong: boolean) => string;

const VERDICT: Record<GradeReport['verdict'], { label: string; tone: Tone }> = {
  pass: { label: 'PASS', tone: 'pass' },
  fail: { label: 'FAIL', tone: 'fail' },
  inconclusive: { label: 'INCONCLUSIVE', tone: 'warn' },
  error: { label: 'ERROR', tone: 'fail' },
};

/** The narrowest width wrapping honours: below it a line would be little more than its indent. */
const MIN_WIDTH = 24;

/** The report as styled lines: verdict, message, numbers, the check table and the fault list. */
export function reportLines(report: GradeReport, options: LayoutOptions = {}): ReportLine[] {
  const { evidenceLines = 3 } = options;
  const width = options.width === undefined ? undefined : Math.max(MIN_WIDTH, options.width);
  // Every span passes through here: the one place program-controlled text is made harmless.
  const span = (text: string, tone: Tone = 'plain', strong = false): Span => ({ text: showControlCharacters(text), tone, ...(strong ? { strong } : {}) });
  const line = (hang: number, ...spans: Span[]): ReportLine => ({ spans, hang });
  const s = report.stats;
  const verdict = VERDICT[report.verdict];
  const lines: ReportLine[] = [
    line(2, span(verdict.label, verdict.tone, true), span(`  ${report.lab}${report.quick ? ' (quick)' : ''}  seed ${report.seed}  ${(s.durationMs / 1000).toFixed(1)} s`)),
    line(0, span(report.message)),
    line(
      2,
      span(
        `inputs ${s.inputs} committed + ${s.abortedInputs} aborted · outputs ${s.outputs} · aborted output records ${s.abortedRecords} · restarts ${s.restarts}${s.selfExits ? ` (${s.selfExits} on its own)` : ''}` +
          (s.outputBlockedMs ? ` · output blocked ${(s.outputBlockedMs / 1000).toFixed(1)} s by stopped instances' transactions` : ''),
        'dim',
      ),
    ),
    line(2, span(`Replay the same fault plan with${report.quick ? ' --quick' : ''} --seed ${report.seed}.`, 'dim')),
    line(0),
  ];
  const nameWidth = Math.max(10, ...report.checks.map((c) => c.name.length));
  // A wrapped summary continues under the summary column, unless that column takes half the width.
  const summaryColumn = 2 + nameWidth + 2;
  const checkHang = width !== undefined && summaryColumn > width / 2 ? 4 : summaryColumn;
  for (const check of report.checks) {
    lines.push(line(checkHang, check.passed ? span('✓', 'pass') : span('✗', 'fail'), span(` ${check.name.padEnd(nameWidth)}  ${check.summary}`)));
    if (check.passed) continue;
    for (const evidence of check.evidence.slice(0, evidenceLines)) lines.push(line(6, span(`    ${evidence}`, 'dim')));
    const more = check.evidence.length - evidenceLines;
    if (more > 0) lines.push(line(6, span(`    … ${more} more evidence line${more === 1 ? '' : 's'}`, 'dim')));
  }
  if (report.faults.length) {
    lines.push(line(0), line(0, span('Faults:')));
    for (const f of report.faults) {
      const at = `  +${(f.atMs / 1000).toFixed(1).padStart(5)} s  `;
      lines.push(
        line(
          at.length,
          span(`${at}${f.kind.padEnd(14)} ${f.instance.padEnd(7)} ${f.crashPoint ?? ''}${f.inTransaction ? ' [open txn]' : ''}${landingNote(f)}${f.note ? `  ${f.note}` : ''}`, 'dim'),
        ),
      );
    }
  }
  return width === undefined ? lines : lines.flatMap((l) => wrapLine(l, width));
}

/** Renders styled lines as text lines with one renderer. Trailing spaces are dropped. */
export function renderLines(lines: readonly ReportLine[], paint: Paint): string[] {
  return lines.map((l) => {
    const spans = merge(trimEnd(l.spans));
    return spans.map((s) => (s.text ? paint(s.text, s.tone, s.strong ?? false) : '')).join('');
  });
}

/** The report rendered by one renderer, line by line. */
export function renderReport(report: GradeReport, paint: Paint, options: LayoutOptions = {}): string[] {
  return renderLines(reportLines(report, options), paint);
}

export const plainPaint: Paint = (text) => text;

const ANSI_TONE: Record<Tone, string> = { plain: '', pass: '32', fail: '31', warn: '33', dim: '2' };

/** ANSI SGR colours, for a text terminal. */
export const ansiPaint: Paint = (text, tone, strong) => {
  const codes = [strong ? '1' : '', ANSI_TONE[tone]].filter(Boolean).join(';');
  return codes ? `\x1b[${codes}m${text}\x1b[0m` : text;
};

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Escaped HTML for a <pre>: each styled span becomes a <span class="kiq-report-TONE"> (plus
 * kiq-report-strong); the page's stylesheet gives the classes their colours.
 */
export const htmlPaint: Paint = (text, tone, strong) => {
  const escaped = text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
  const classes = [tone === 'plain' ? '' : `kiq-report-${tone}`, strong ? 'kiq-report-strong' : ''].filter(Boolean).join(' ');
  return classes ? `<span class="${classes}">${escaped}</span>` : escaped;
};

export interface FormatOptions extends LayoutOptions {
  /** ANSI colours (for a terminal). */
  color?: boolean;
}

/** The report as one text block: plain, or with ANSI colours. */
export function formatReport(report: GradeReport, options: FormatOptions = {}): string {
  return renderReport(report, options.color ? ansiPaint : plainPaint, options).join('\n');
}

// ---- wrapping ---------------------------------------------------------------------------------

/** A word (or a run of spaces) as pieces of spans, so a word may change tone midway. */
interface Unit {
  pieces: Span[];
  length: number;
  space: boolean;
}

/** Splits a line at spaces into lines of at most `width` columns; words are never cut. */
export function wrapLine(line: ReportLine, width: number): ReportLine[] {
  if (line.spans.reduce((n, s) => n + s.text.length, 0) <= width) return [line];
  const units: Unit[] = [];
  for (const s of line.spans) {
    for (const text of s.text.split(/( +)/)) {
      if (!text) continue;
      const space = text.startsWith(' ');
      const piece = { ...s, text };
      const last = units.at(-1);
      if (last && !space && !last.space) {
        last.pieces.push(piece);
        last.length += text.length;
      } else units.push({ pieces: [piece], length: text.length, space });
    }
  }
  const hang = Math.min(line.hang, Math.floor(width / 2));
  const out: ReportLine[] = [];
  let current: Span[] = [];
  let column = 0;
  let hasWord = false;
  let gap: Unit | undefined;
  for (const unit of units) {
    if (unit.space) {
      // Leading spaces (an indent) stay; spaces between words wait for the next word.
      if (!hasWord) {
        current.push(...unit.pieces);
        column += unit.length;
      } else gap = unit;
      continue;
    }
    if (hasWord && column + (gap?.length ?? 0) + unit.length > width) {
      out.push({ spans: current, hang: line.hang });
      current = hang ? [{ text: ' '.repeat(hang), tone: 'plain' }] : [];
      column = hang;
    } else if (gap) {
      current.push(...gap.pieces);
      column += gap.length;
    }
    gap = undefined;
    current.push(...unit.pieces);
    column += unit.length;
    hasWord = true;
  }
  out.push({ spans: current, hang: line.hang });
  return out;
}

/** Joins neighbouring spans of the same style (wrapping splits spans into words). */
function merge(spans: readonly Span[]): Span[] {
  const out: Span[] = [];
  for (const s of spans) {
    const last = out.at(-1);
    if (last && last.tone === s.tone && !!last.strong === !!s.strong) out[out.length - 1] = { ...last, text: last.text + s.text };
    else out.push(s);
  }
  return out;
}

function trimEnd(spans: readonly Span[]): Span[] {
  const out = [...spans];
  while (out.length) {
    const last = out.at(-1)!;
    const text = last.text.replace(/ +$/, '');
    if (text) {
      out[out.length - 1] = { ...last, text };
      break;
    }
    out.pop();
  }
  return out;
}
