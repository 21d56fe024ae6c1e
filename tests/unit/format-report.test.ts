/**
 * The one report formatter (src/shared/format-report.ts) and its three renderings: the CLI's ANSI
 * text, the workbench terminal's xterm lines and the class view's HTML say the same words, with the
 * same check table and fault list; narrow terminals wrap at spaces; text the learner's program chose
 * cannot smuggle escape sequences into any of them. No broker needed.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, htmlPaint, renderReport, showControlCharacters } from '../../src/shared/format-report.ts';
import { formatReport as terminalReport } from '../../src/components/workbench/terminal/format-report.ts';
import type { GradeReport } from '../../src/shared/report.ts';

// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[[0-9;]*m/g;
const fromAnsi = (text: string) => text.replace(SGR, '');
const fromHtml = (html: string) =>
  html
    .replace(/<\/?span[^>]*>/g, '')
    .replace(/&(lt|gt|quot|#39|amp);/g, (_, name: string) => ({ lt: '<', gt: '>', quot: '"', '#39': "'", amp: '&' })[name]!);
/** The terminal's lines without the blank lines around the report. */
const terminalText = (report: GradeReport, columns?: number) => fromAnsi(terminalReport(report, columns).slice(1, -1).join('\n'));

function sampleReport(overrides: Partial<GradeReport> = {}): GradeReport {
  return {
    version: 1,
    lab: 'single-stage',
    verdict: 'fail',
    message: '1 of 3 checks failed: no-duplicates. Every output record must appear once, even when the program is killed between writing and committing.',
    seed: 7,
    quick: true,
    startedAt: new Date(0).toISOString(),
    checks: [
      { name: 'no-loss', passed: true, summary: 'all 10 expected outputs are committed', evidence: [] },
      {
        name: 'no-duplicates',
        passed: false,
        summary: '2 duplicate output records, both written again after a kill in an open transaction',
        evidence: ['output-0@4 k1 <v1> duplicates output-0@2', 'output-0@9 k2 v2 duplicates output-0@5', 'output-1@2 k3 v3 duplicates output-1@1', 'output-2@1 k4 v4'],
      },
      { name: 'no-hanging-transactions', passed: true, summary: 'no transaction left open', evidence: [] },
    ],
    faults: [
      { atMs: 1200, kind: 'kill', instance: 'i1', crashPoint: 'after:commit', inTransaction: true, aimedAt: ['after:commit'], landed: 'at-point' },
      { atMs: 3400, kind: 'zombie', instance: 'i2', inTransaction: false, note: 'the replacement fenced it' },
    ],
    timeline: [],
    stats: { inputs: 10, abortedInputs: 2, outputs: 12, abortedRecords: 3, restarts: 2, selfExits: 1, durationMs: 5000 },
    ...overrides,
  };
}

describe('one report formatter', () => {
  it('gives the CLI, the workbench terminal and the class view the same words, check table and fault list', () => {
    const report = sampleReport();
    const plain = formatReport(report);
    const cli = formatReport(report, { color: true });
    const terminal = terminalReport(report);
    const html = renderReport(report, htmlPaint).join('\n');

    expect(cli).toMatch(SGR);
    expect(terminal.join('\n')).toMatch(SGR);
    expect(html).toContain('<span class="kiq-report-fail kiq-report-strong">FAIL</span>');
    expect(fromAnsi(cli)).toBe(plain);
    expect(terminalText(report)).toBe(plain);
    expect(fromHtml(html)).toBe(plain);
    // The HTML escapes what it shows.
    expect(html).toContain('k1 &lt;v1&gt;');
    expect(html).not.toContain('<v1>');

    const lines = plain.split('\n');
    expect(lines[0]).toBe('FAIL  single-stage (quick)  seed 7  5.0 s');
    expect(plain).toContain('Replay the same fault plan with --quick --seed 7.');
    expect(lines).toContain('✓ no-loss                  all 10 expected outputs are committed');
    expect(lines).toContain('✗ no-duplicates            2 duplicate output records, both written again after a kill in an open transaction');
    expect(lines).toContain('    output-1@2 k3 v3 duplicates output-1@1');
    expect(plain).not.toContain('output-2@1 k4 v4');
    expect(lines).toContain('    … 1 more evidence line');
    const faults = lines.slice(lines.indexOf('Faults:') + 1);
    expect(faults).toEqual([
      '  +  1.2 s  kill           i1      after:commit [open txn] [hit its point]',
      '  +  3.4 s  zombie         i2        the replacement fenced it',
    ]);
  });

  it('wraps a narrow terminal at spaces, never inside a word, and says the same words', () => {
    const report = sampleReport();
    const words = (text: string) => text.split(/\s+/).filter(Boolean);
    const wide = formatReport(report);
    for (const columns of [30, 40, 60]) {
      const narrow = terminalText(report, columns);
      expect(words(narrow)).toEqual(words(wide));
      for (const line of narrow.split('\n')) expect(line.length, line).toBeLessThanOrEqual(columns);
      // The CLI wraps the same way at the same width.
      expect(formatReport(report, { width: columns })).toBe(narrow);
    }
    const narrow = terminalText(report, 40).split('\n');
    // A wrapped evidence line continues indented under its text.
    expect(narrow).toContain('    output-0@4 k1 <v1> duplicates');
    expect(narrow).toContain('      output-0@2');
    // A word longer than the width stays whole on its own line.
    const long = 'x'.repeat(50);
    const withLongWord = terminalText(sampleReport({ message: `short words then ${long} and more` }), 30).split('\n');
    expect(withLongWord).toContain(long);
    expect(withLongWord).toContain('short words then');
  });

  it('shows control characters in program-controlled text escaped, in every rendering', () => {
    const sgr = '\x1b[31mRED\x1b[0m';
    const osc8 = '\x1b]8;;https://example.invalid\x07click\x1b]8;;\x07';
    const report = sampleReport({
      checks: [{ name: 'no-duplicates', passed: false, summary: 'a key with escapes', evidence: [`output-0@4 key=${sgr} value=${osc8}`] }],
      faults: [{ atMs: 100, kind: 'kill', instance: 'i1', inTransaction: null, note: 'title\x1b]0;owned\x07 \u202eright-to-left\nnext' }],
    });
    const cli = formatReport(report, { color: true });
    const terminal = terminalReport(report).join('\n');
    const html = renderReport(report, htmlPaint).join('\n');
    for (const text of [cli, terminal]) {
      // Only the colours the renderer chose remain as escape sequences.
      // eslint-disable-next-line no-control-regex
      expect(fromAnsi(text)).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/);
      expect(fromAnsi(text)).toContain('key=\\x1b[31mRED\\x1b[0m value=\\x1b]8;;https://example.invalid\\x07click\\x1b]8;;\\x07');
      expect(fromAnsi(text)).toContain('title\\x1b]0;owned\\x07 \\u202eright-to-left\\nnext');
    }
    // eslint-disable-next-line no-control-regex
    expect(html).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/);
    expect(fromHtml(html)).toBe(formatReport(report));
    expect(showControlCharacters('tab\there \x9b2J')).toBe('tab\\there \\x9b2J');
  });
});

describe('report text', () => {
  it('shows a ✓/✗ table with the first evidence lines of failed checks', () => {
    const report: GradeReport = {
      version: 1,
      lab: 'single-stage',
      verdict: 'fail',
      message: '1 of 2 checks failed: no-duplicates.',
      seed: 7,
      quick: false,
      startedAt: new Date(0).toISOString(),
      checks: [
        { name: 'no-loss', passed: true, summary: 'all 10 expected outputs are committed', evidence: [] },
        { name: 'no-duplicates', passed: false, summary: '2 duplicate output records', evidence: ['output-0@4 dup', 'output-0@9 dup', 'output-1@2 dup', 'output-2@1 dup'] },
      ],
      faults: [{ atMs: 1200, kind: 'kill', instance: 'i1', crashPoint: 'after:commit', inTransaction: false }],
      timeline: [],
      stats: { inputs: 10, abortedInputs: 2, outputs: 12, abortedRecords: 0, restarts: 1, selfExits: 0, durationMs: 5000 },
    };
    const text = formatReport(report);
    expect(text).toMatch(/^FAIL  single-stage  seed 7/);
    expect(text).toContain('✓ no-loss');
    expect(text).toContain('✗ no-duplicates');
    expect(text).toContain('output-1@2 dup');
    expect(text).not.toContain('output-2@1 dup');
    expect(text).toContain('… 1 more');
  });
});
