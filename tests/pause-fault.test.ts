/**
 * The grader's 'pause' fault, on the zombie lab: an instance is frozen (SIGSTOP) mid-transaction
 * past its session timeout, NO replacement starts, the other instances take its partitions over
 * and redo its batch, then it resumes as a normal group member. With one transactional.id per
 * instance its stale transaction commits (duplicates); with one per input partition it is fenced.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT_DIR } from '../lab-server/core/paths.ts';
import { gradeProgram } from '../lab-server/runner/check-labs.ts';
import type { ProgramInput } from '../lab-server/runner/types.ts';
import { useGradingCluster } from './support/kafka.ts';
import { brokenProgram } from './support/broken-program.ts';

const cluster = useGradingCluster();

const program = (file: string): ProgramInput => ({ kind: 'code', code: fs.readFileSync(path.join(ROOT_DIR, 'labs/zombie', file), 'utf8') });

describe('pause fault', () => {
  it('freezes an instance mid-transaction without a replacement, then resumes it: a per-instance id commits the zombie batch', async () => {
    const report = await gradeProgram(cluster(), 'zombie', { kind: 'code', code: brokenProgram('zombie', 'per-instance-id') }, { quick: true, seed: 3 });
    const pause = report.faults.find((f) => f.kind === 'pause');
    expect(pause, JSON.stringify(report.faults)).toBeDefined();
    expect(pause!.inTransaction).toBe(true);
    expect(['after:send', 'after:sendOffsets']).toContain(pause!.crashPoint);

    // No replacement while it was frozen: the paused slot gets no new incarnation until the next fault.
    const nextFaultAt = report.faults.find((f) => f.atMs > pause!.atMs)?.atMs ?? Infinity;
    const restartsOfPaused = report.timeline.filter((t) => t.kind === 'start' && t.instance === pause!.instance && t.atMs > pause!.atMs && t.atMs < nextFaultAt);
    expect(restartsOfPaused).toEqual([]);
    // Only the plan's kill restarts an instance.
    expect(report.stats.restarts - report.stats.selfExits).toBe(report.faults.filter((f) => f.kind === 'kill').length);

    // The others redid its batch, and its own transaction still committed when it woke up.
    const duplicates = report.checks.find((c) => c.name === 'no-duplicates')!;
    expect(duplicates.passed).toBe(false);
    expect(duplicates.evidence.join('\n')).toMatch(new RegExp(`after fault pause on ${pause!.instance}`));
  }, 150_000);

  it('one transactional.id per input partition fences the resumed instance', async () => {
    const report = await gradeProgram(cluster(), 'zombie', program('solution.ts'), { quick: true, seed: 3 });
    expect(report.verdict, `${report.message}\n${report.checks.filter((c) => !c.passed).flatMap((c) => c.evidence).join('\n')}`).toBe('pass');
    expect(report.faults.find((f) => f.kind === 'pause')?.inTransaction).toBe(true);
  }, 150_000);
});
