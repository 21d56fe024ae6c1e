/**
 * What a learner sees of a program's output (lab-server/runner/program/output-sink.ts).
 */
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../../lab-server/core/paths.ts';
import { OutputSink } from '../../lab-server/runner/program/output-sink.ts';

describe('learner output', () => {
  it('hides server paths, cuts long lines and caps the total once', () => {
    const lines: string[] = [];
    const sink = new OutputSink((_i, _s, line) => lines.push(line), '/tmp/kafkaiq-abc', { maxBytes: 300, maxLineChars: 60 });
    sink.line('i1', 'stderr', `    at main (${ROOT_DIR}/node_modules/kafkajs/src/index.js:10:5)`);
    sink.line('i1', 'stderr', 'at file:///tmp/kafkaiq-abc/program.mjs:3:1');
    sink.line('i1', 'stdout', 'x'.repeat(80));
    for (let i = 0; i < 20; i++) sink.line('i1', 'stdout', `line ${i} ${'y'.repeat(30)}`);
    expect(lines[0]).toBe('    at main (node_modules/kafkajs/src/index.js:10:5)');
    expect(lines[1]).toBe('at program.mjs:3:1');
    expect(lines[2]).toMatch(/^x{60} … \[line cut at 60 characters\]$/);
    expect(lines.filter((l) => l.startsWith('[output truncated'))).toHaveLength(1);
    expect(lines.join('\n')).not.toContain(ROOT_DIR);
  });
});
