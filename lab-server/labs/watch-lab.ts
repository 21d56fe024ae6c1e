/**
 * `kafkaiq check --watch <lab>`: the authoring loop. Every time a file of labs/<lab>/ is saved,
 * the fixtures it belongs to are graded again and their matrix lines printed, the same lines
 * `kafkaiq check` prints: a broken variant saved is that variant graded, lab.ts saved is the
 * whole lab (and its coverage rule) again.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { ClusterSource } from '../broker/cluster-pool.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { LABS_DIR } from '../core/paths.ts';
import { labFixtures, runFixtures } from '../runner/check-labs.ts';
import { labCoverageProblems } from './coverage.ts';
import { reloadLab } from './load-lab.ts';

/** What a saved file asks for: the whole lab again, some of its fixtures, or nothing. */
export type WatchTarget = { kind: 'lab' } | { kind: 'fixtures'; programs: string[] } | { kind: 'none' };

/**
 * Which fixtures a changed file of a lab folder maps to. `file` is relative to labs/<lab>/ (as
 * fs.watch reports it, either separator). lab.ts and any other module of the folder (a throughput
 * baseline, a helper lab.ts imports) can change every grade; hints.md, notes and editor files none.
 */
export function watchTargetOf(file: string): WatchTarget {
  const parts = file.split(/[\\/]/).filter(Boolean);
  const name = parts[parts.length - 1] ?? '';
  // Editors save through temporary files (vim's 4913, .swp, foo.ts~, .#foo.ts): not fixtures.
  if (name.startsWith('.')) return { kind: 'none' };
  // A broken variant: a whole program (.ts) or a mistake made to a solution (.diff).
  if (parts.length === 2 && parts[0] === 'broken' && /\.(ts|diff)$/.test(name)) return { kind: 'fixtures', programs: [`broken/${name.replace(/\.(ts|diff)$/, '')}`] };
  if (!name.endsWith('.ts')) return { kind: 'none' };
  if (parts.length === 1 && name === 'solution.ts') return { kind: 'fixtures', programs: ['solution'] };
  if (parts.length === 1 && name === 'starter.ts') return { kind: 'fixtures', programs: ['starter'] };
  return { kind: 'lab' };
}

/** Merges what several changes (one debounce window) ask for. */
export function mergeWatchTargets(targets: readonly WatchTarget[]): WatchTarget {
  if (targets.some((t) => t.kind === 'lab')) return { kind: 'lab' };
  const programs = [...new Set(targets.flatMap((t) => (t.kind === 'fixtures' ? t.programs : [])))];
  return programs.length ? { kind: 'fixtures', programs } : { kind: 'none' };
}

export interface WatchOptions {
  quick?: boolean;
  log: (line: string) => void;
  /** How long to wait after the last change before grading (editors write a file in steps). */
  debounceMs?: number;
}

/**
 * Watches labs/<lab>/ until `signal` aborts and grades what each change asks for (nothing at the
 * start: `kafkaiq check <lab>` is the whole matrix). Changes during a grade are collected and
 * graded right after it.
 */
export async function watchLab(labId: string, clusters: ClusterSource, signal: AbortSignal, options: WatchOptions): Promise<void> {
  const dir = path.join(LABS_DIR, labId);
  if (!fs.existsSync(path.join(dir, 'lab.ts'))) throw new KafkaIqError('LAB_NOT_FOUND', `No lab "${labId}" to watch: there is no labs/${labId}/lab.ts.`);
  const { log } = options;
  let pending: WatchTarget[] = [];
  let wake: () => void = () => {};
  let timer: NodeJS.Timeout | undefined;
  const watcher = fs.watch(dir, { recursive: true }, (_event, file) => {
    if (!file) return;
    const target = watchTargetOf(String(file));
    if (target.kind === 'none') return;
    pending.push(target);
    clearTimeout(timer);
    timer = setTimeout(() => wake(), options.debounceMs ?? 300);
  });
  const stopped = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  try {
    for (const problem of await labCoverageProblems([labId])) log(`✗ coverage: ${problem}`);
    log(`Watching labs/${labId}/: save a program to grade it again, lab.ts to grade the whole lab (Ctrl-C stops).`);
    while (!signal.aborted) {
      const target = mergeWatchTargets(pending);
      pending = [];
      if (target.kind !== 'none') await regrade(labId, target, clusters, options);
      if (signal.aborted) break;
      if (target.kind !== 'none' && !pending.length) log(`\nWatching labs/${labId}/ (Ctrl-C stops).`);
      // Sleep until the debounce timer fires or Ctrl-C; changes made meanwhile are in `pending`.
      if (!pending.length) await Promise.race([new Promise<void>((resolve) => (wake = resolve)), stopped]);
    }
  } finally {
    clearTimeout(timer);
    watcher.close();
  }
}

async function regrade(labId: string, target: Exclude<WatchTarget, { kind: 'none' }>, clusters: ClusterSource, options: WatchOptions): Promise<void> {
  const { log } = options;
  try {
    // lab.ts may have changed: load it afresh (fixture programs are read from disk every time).
    await reloadLab(labId);
    const fixtures = await labFixtures([labId]);
    const chosen = target.kind === 'lab' ? fixtures : fixtures.filter((f) => target.programs.includes(f.program));
    if (!chosen.length) return; // a broken variant that was deleted, or renamed away: nothing to grade
    log(`\n${new Date().toLocaleTimeString()} grading ${target.kind === 'lab' ? `every fixture of ${labId}` : chosen.map((f) => f.program).join(', ')}`);
    if (target.kind === 'lab') for (const problem of await labCoverageProblems([labId])) log(`✗ coverage: ${problem}`);
    await runFixtures(chosen, clusters, { quick: options.quick, parallel: target.kind === 'lab' ? 2 : 1, log });
  } catch (err) {
    // A lab.ts with a mistake, a broken variant without its first line: say so, keep watching.
    log(`✗ ${describeError(err)}`);
  }
}
