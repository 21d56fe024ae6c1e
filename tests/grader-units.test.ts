/**
 * The grader's pure parts, and its handling of bad input. Slow end-to-end grading lives in
 * tests/labs.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { labDefinitionSchema } from '../src/shared/lab.ts';
import { parseWithFriendlyErrors } from '../src/shared/validate.ts';
import { KafkaIqError } from '../src/shared/errors.ts';
import { planFaults } from '../lab-server/runner/fault-plan.ts';
import { planSeedTransactions, splitIntoWaves } from '../lab-server/runner/seeder.ts';
import { OutputSink } from '../lab-server/runner/program/output-sink.ts';
import { compileProgram } from '../lab-server/runner/program/compile.ts';
import { ROOT_DIR } from '../lab-server/core/paths.ts';
import { listLabIds, loadLab } from '../lab-server/labs/load-lab.ts';
import { formatReport } from '../src/shared/format-report.ts';
import type { GradeReport } from '../src/shared/report.ts';
import { asPipeline } from './support/labs.ts';

describe('fault plans', () => {
  const specs = [
    { kind: 'kill' as const, at: ['after:send' as const, 'before:commit' as const], instance: 1, occurrence: 1 },
    { kind: 'kill' as const, at: ['after:commit' as const], instance: 1, occurrence: 1 },
    { kind: 'zombie' as const, at: ['after:send' as const], instance: 1, occurrence: 1 },
    { kind: 'broker-restart' as const, at: [], instance: 1, occurrence: 1 },
  ];

  it('replays the same plan for the same seed and differs across seeds', () => {
    expect(planFaults(specs, 42)).toEqual(planFaults(specs, 42));
    const orders = new Set(Array.from({ length: 20 }, (_, seed) => planFaults(specs, seed).faults.map((f) => `${f.kind}@${f.crashPoint}`).join(',')));
    expect(orders.size).toBeGreaterThan(3);
  });

  it('fires every listed fault once, only at allowed crash points, and never starts with a broker restart', () => {
    for (let seed = 0; seed < 50; seed++) {
      const plan = planFaults(specs, seed);
      expect(plan.faults.map((f) => f.kind).sort()).toEqual(['broker-restart', 'kill', 'kill', 'zombie']);
      expect(plan.faults[0]!.kind).not.toBe('broker-restart');
      for (const f of plan.faults) {
        const spec = specs.find((s) => s.kind === f.kind && (s.at.length === 0 || s.at.includes(f.crashPoint as never)));
        expect(spec, `${f.kind} at ${f.crashPoint}`).toBeDefined();
      }
    }
  });

  it('puts coordinator kills last, so no later program kill restarts a program they left stuck', () => {
    const withCoordinator = [
      { kind: 'coordinator-kill' as const, at: ['before:commit' as const], instance: 1, occurrence: 1 },
      ...specs,
      { kind: 'coordinator-kill' as const, at: ['after:send' as const], instance: 1, occurrence: 1 },
    ];
    const orders = new Set<string>();
    for (let seed = 0; seed < 50; seed++) {
      const kinds = planFaults(withCoordinator, seed).faults.map((f) => f.kind);
      expect(kinds.slice(-2)).toEqual(['coordinator-kill', 'coordinator-kill']);
      expect(kinds[0]).not.toBe('broker-restart');
      orders.add(planFaults(withCoordinator, seed).faults.map((f) => `${f.kind}@${f.crashPoint}`).join(','));
    }
    expect(orders.size).toBeGreaterThan(3);
  });
});

describe('seeding', () => {
  it('writes aborted transactions, ends every seed with a committed one and keeps a key on one partition', async () => {
    const lab = asPipeline((await loadLab('single-stage')).definition);
    const txns = planSeedTransactions(lab);
    expect(txns.filter((t) => !t.commit).length).toBeGreaterThan(3);
    expect(txns.at(-1)!.commit).toBe(true);
    const partitionOfKey = new Map<string, number>();
    for (const r of txns.flatMap((t) => t.records)) {
      expect(partitionOfKey.get(r.key) ?? r.partition).toBe(r.partition);
      partitionOfKey.set(r.key, r.partition);
    }
    const values = txns.flatMap((t) => t.records.map((r) => r.value));
    expect(new Set(values).size).toBe(values.length);
    const waves = splitIntoWaves(txns, 5);
    expect(waves).toHaveLength(5);
    expect(waves.flat()).toEqual(txns);
  });
});

describe('lab definitions', () => {
  it('names the bad field in one line', () => {
    const bad = { title: 'x', summary: 'too short' };
    let error: unknown;
    try {
      parseWithFriendlyErrors(labDefinitionSchema, bad, 'Invalid lab "demo"', 'LAB_INVALID');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(KafkaIqError);
    expect((error as KafkaIqError).code).toBe('LAB_INVALID');
    expect((error as KafkaIqError).message).toMatch(/^Invalid lab "demo": title: .*3/);
    expect((error as KafkaIqError).message.split('\n')).toHaveLength(1);
  });

  it('rejects an unknown lab with the list of known ones', async () => {
    await expect(loadLab('no-such-lab')).rejects.toThrow(/No lab "no-such-lab": known labs are .*single-stage/);
    await expect(loadLab('../etc')).rejects.toMatchObject({ code: 'LAB_NOT_FOUND' });
  });

  it('loads every lab in labs/ with its fixtures', async () => {
    const ids = listLabIds();
    expect(ids).toEqual(expect.arrayContaining(['copy', 'single-stage']));
    for (const id of ids) {
      const lab = await loadLab(id);
      expect(lab.definition.checks.length, id).toBeGreaterThan(0);
      expect(fs.existsSync(lab.solutionFile)).toBe(true);
      for (const broken of lab.broken) expect(lab.definition.checks, `${id}/${broken.name} expects a check the lab runs`).toContain(broken.expectFail);
    }
  });
});

describe('compiling learner programs', () => {
  it('reports a syntax error with its line and column, without server paths', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-test-'));
    const failure = await compileProgram('const x = ;\n', dir).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(KafkaIqError);
    expect((failure as KafkaIqError).code).toBe('COMPILE_FAILED');
    expect((failure as KafkaIqError).message).toMatch(/^program\.ts:1:11: /);
    expect((failure as KafkaIqError).message).not.toContain(ROOT_DIR);
  });

  it('type errors do not block a run', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkaiq-test-'));
    const compiled = await compileProgram("const n: number = 'not a number';\nconsole.log(n);\n", dir);
    expect(fs.existsSync(compiled.file)).toBe(true);
  });
});

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

describe('fault plans of a one-instance lab with a join', () => {
  it('puts the join last, so no later fault aims at an instance that may own no partition of its wave', () => {
    const specs = [
      { kind: 'kill' as const, at: ['after:db-write' as const], instance: 1, occurrence: 1 },
      { kind: 'join' as const, at: [], instance: 1, occurrence: 1 },
      { kind: 'kill' as const, at: ['after:db-commit' as const], instance: 1, occurrence: 1 },
    ];
    for (let seed = 0; seed < 30; seed++) expect(planFaults(specs, seed, { joinsLast: true }).faults.at(-1)!.kind).toBe('join');
    const anywhere = new Set(Array.from({ length: 30 }, (_, seed) => planFaults(specs, seed).faults.findIndex((f) => f.kind === 'join')));
    expect(anywhere.size).toBeGreaterThan(1);
  });
});
