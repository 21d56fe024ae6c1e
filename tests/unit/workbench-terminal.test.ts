/**
 * The workbench terminal's pure parts: command parsing, topic resolution, line editing and the
 * text it prints for inspect results and reports. No browser needed.
 */
import { describe, expect, it } from 'vitest';
import { parseCommand, resolveTopic } from '../../src/components/workbench/terminal/commands.ts';
import { LineEditor } from '../../src/components/workbench/terminal/line-editor.ts';
import { formatInspectResult, formatRecord } from '../../src/components/workbench/terminal/format-inspect.ts';
import { formatReport } from '../../src/components/workbench/terminal/format-report.ts';
import { visibleLength } from '../../src/components/workbench/terminal/ansi.ts';
import { inspectMessageSchema } from '../../src/shared/messages.ts';
import { fakeReport } from '../support/fake-lab-session.ts';

// eslint-disable-next-line no-control-regex
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '');

describe('terminal commands', () => {
  it('parses grade options', () => {
    expect(parseCommand('grade')).toEqual({ kind: 'grade', quick: false });
    expect(parseCommand('  grade --quick --seed 42 ')).toEqual({ kind: 'grade', quick: true, seed: 42 });
    expect(parseCommand('grade --seed=7')).toEqual({ kind: 'grade', quick: false, seed: 7 });
    expect(parseCommand('grade --seed x')).toMatchObject({ kind: 'invalid' });
    expect(parseCommand('grade --fast')).toMatchObject({ kind: 'invalid', message: expect.stringContaining('--fast') });
  });

  it('sends only the consume options the learner gave, and they validate', () => {
    const bare = parseCommand('consume OUTPUT_TOPIC');
    expect(bare).toEqual({ kind: 'inspect', command: { what: 'consume', topic: 'OUTPUT_TOPIC' }, topicArg: 'OUTPUT_TOPIC' });
    const full = parseCommand('consume out --from-beginning --isolation read_uncommitted');
    expect(full).toMatchObject({ command: { what: 'consume', topic: 'out', fromBeginning: true, isolation: 'read_uncommitted' } });
    for (const command of [bare, full]) {
      if (command.kind !== 'inspect') throw new Error('expected inspect');
      expect(inspectMessageSchema.safeParse({ type: 'inspect', command: command.command }).success).toBe(true);
    }
    expect(parseCommand('consume')).toMatchObject({ kind: 'invalid', message: expect.stringContaining('usage') });
    expect(parseCommand('consume a --isolation dirty')).toMatchObject({ kind: 'invalid' });
  });

  it('answers unknown commands with a one-line hint', () => {
    const result = parseCommand('produce x');
    expect(result).toEqual({ kind: 'invalid', message: 'unknown command "produce": type help for the list' });
    expect(parseCommand('   ')).toEqual({ kind: 'empty' });
  });

  it('resolves env names and lab names to the real topic', () => {
    const topics = { INPUT_TOPIC: 'kiq-ab12-input', OUTPUT_TOPIC: 'kiq-ab12-output' };
    expect(resolveTopic('OUTPUT_TOPIC', topics)).toEqual({ topic: 'kiq-ab12-output' });
    expect(resolveTopic('input', topics)).toEqual({ topic: 'kiq-ab12-input' });
    expect(resolveTopic('some-real-topic', topics)).toEqual({ topic: 'some-real-topic' });
    expect(resolveTopic('OUTPUT_TOPIC', {})).toMatchObject({ error: expect.stringContaining('run your program first') });
  });
});

describe('line editor', () => {
  function editor() {
    const submitted: string[] = [];
    const output: string[] = [];
    const line = new LineEditor((data) => output.push(data), (text) => submitted.push(text));
    line.start();
    return { line, submitted, output };
  }

  it('edits in the middle of the line and submits it', () => {
    const { line, submitted } = editor();
    line.input('cosume');
    line.input('\x1b[D'.repeat(4)); // back to after "co"
    line.input('n');
    expect(line.state).toMatchObject({ buffer: 'consume', cursor: 3 });
    line.input('\x1b[F');
    line.input('\x7f');
    line.input('e x');
    line.input('\r');
    expect(submitted).toEqual(['consume x']);
    expect(line.state.buffer).toBe('');
  });

  it('walks the history with the arrow keys and keeps the draft', () => {
    const { line } = editor();
    for (const text of ['help', 'topics']) {
      line.input(text);
      line.input('\r');
    }
    line.input('tx');
    line.input('\x1b[A');
    expect(line.state.buffer).toBe('topics');
    line.input('\x1b[A');
    line.input('\x1b[A');
    expect(line.state.buffer).toBe('help');
    line.input('\x1b[B');
    line.input('\x1b[B');
    expect(line.state.buffer).toBe('tx');
  });

  it('cancels the line on Ctrl-C and submits each line of a paste', () => {
    const { line, submitted } = editor();
    line.input('grade --qu');
    line.input('\x03');
    expect(line.state.buffer).toBe('');
    expect(submitted).toEqual([]);
    line.input('help\r\ntopics\r\nst');
    expect(submitted).toEqual(['help', 'topics']);
    expect(line.state.buffer).toBe('st');
  });

  it('prints output above the line being typed and redraws it', () => {
    const { line, output } = editor();
    line.input('top');
    output.length = 0;
    line.printAbove(['[i1] hello']);
    const written = output.join('');
    expect(written.indexOf('[i1] hello')).toBeLessThan(written.lastIndexOf('top'));
    expect(line.state).toMatchObject({ buffer: 'top', cursor: 3 });
  });
});

describe('terminal formatting', () => {
  it('marks aborted records, open transactions and markers distinctly', () => {
    const base = { partition: 1, offset: 5, key: 'k', value: 'v' };
    expect(formatRecord({ ...base, status: 'aborted' })).toContain('\x1b[31m');
    expect(plain(formatRecord({ ...base, status: 'aborted' }))).toContain('ABORTED');
    expect(formatRecord({ ...base, status: 'open' })).toContain('\x1b[33m');
    expect(plain(formatRecord({ ...base, key: null, value: 'commit', status: 'marker' }))).toBe('p1@5 ── commit marker ──');
    expect(plain(formatRecord({ ...base, status: 'committed' }))).toBe('p1@5 k v');
  });

  it('draws the offsets table with aligned columns', () => {
    const lines = formatInspectResult({
      what: 'offsets',
      topic: 't',
      partitions: [
        { partition: 0, logStart: 0, lso: 12, hwm: 15, committed: 12, blockedLag: 3 },
        { partition: 1, logStart: 0, lso: 9, hwm: 9, committed: null, blockedLag: 0 },
      ],
    }).map(plain);
    expect(lines[1]).toMatch(/^partition\s+log start\s+LSO\s+HWM\s+committed\s+blocked lag$/);
    expect(new Set(lines.slice(1).map((l) => visibleLength(l))).size).toBeLessThanOrEqual(2);
    expect(lines[3]).toMatch(/0\s+0\s+12\s+15\s+12\s+3$/);
  });

  it('prints a report with a mark per check and at most three evidence lines', () => {
    const report = fakeReport('single-stage', {
      verdict: 'fail',
      checks: [{ name: 'no-duplicates', passed: false, summary: '4 duplicates', evidence: ['a', 'b', 'c', 'd'] }],
    });
    const text = formatReport(report).map(plain).join('\n');
    expect(text).toContain('FAIL');
    expect(text).toContain('✗ no-duplicates  4 duplicates');
    expect(text).toContain('    c');
    expect(text).not.toContain('    d');
    expect(text).toContain('… 1 more evidence line');
    expect(text).toContain('--seed 42');
    expect(text).toMatch(/Faults:\n +\+ +1\.2 s {2}kill/);
  });
});
