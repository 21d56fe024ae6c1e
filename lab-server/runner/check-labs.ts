import fs from 'node:fs';
import { asClusterSource, type ClusterHandle, type ClusterSource } from '../broker/cluster-pool.ts';
import { bestEffort } from '../core/best-effort.ts';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { showControlCharacters } from '../../src/shared/sanitise.ts';
import type { DatabasePool } from '../db/pool.ts';
import { randomNamespace } from '../kafka/attempt-names.ts';
import { loadLab } from '../labs/load-lab.ts';
import type { CheckName, GradeReport } from '../../src/shared/report.ts';
import type { SessionListener } from './contract.ts';
import { createAttempt } from './attempt.ts';
import type { ProgramInput } from './types.ts';

export interface FixtureResult {
  lab: string;
  program: string;
  expected: string;
  got: string;
  ok: boolean;
  seconds: number;
  /** Of the grade that decided: faults aimed at crash points, and how many of them landed on one. */
  aimed: { faults: number; atPoint: number };
}

const silent: SessionListener = { output: () => {}, diagnostics: () => {}, progress: () => {}, state: () => {}, fault: () => {} };

/** How many of a grade's terminal lines a wrong verdict's context keeps: the grader's own, and the program's last errors. */
const KEPT_SYSTEM_LINES = 30;
const KEPT_STDERR_LINES = 6;

/**
 * A listener that keeps, bounded, what the learner's terminal would have shown of a grade: the
 * grader's own lines (why it waited, what it found open) and the program's last stderr lines.
 */
function terminalTail(): { listener: SessionListener; lines(): string[] } {
  const system: string[] = [];
  const stderr: string[] = [];
  const keep = (into: string[], max: number, line: string) => {
    into.push(showControlCharacters(line).slice(0, 240));
    if (into.length > max) into.shift();
  };
  return {
    listener: {
      ...silent,
      output: (instance, stream, line) => {
        if (stream === 'system') keep(system, KEPT_SYSTEM_LINES, line);
        else if (stream === 'stderr') keep(stderr, KEPT_STDERR_LINES, `${instance}: ${line}`);
      },
    },
    lines: () => [...system.map((l) => `grader: ${l}`), ...stderr.map((l) => `stderr ${l}`)],
  };
}

/**
 * Grades one program on the cluster its lab declares (`clusters` may be one fixed cluster): what
 * `kafkaiq grade` and `kafkaiq check` (every fixture) both call.
 */
export async function gradeProgram(
  clusters: ClusterSource | ClusterHandle,
  labId: string,
  program: ProgramInput,
  options: { quick?: boolean; seed?: number; listener?: SessionListener; databases?: DatabasePool } = {},
): Promise<GradeReport> {
  const lab = await loadLab(labId);
  const cluster = await asClusterSource(clusters).get(lab.definition.cluster);
  const attempt = createAttempt({
    lab,
    program,
    brokers: cluster.brokers,
    control: cluster.control,
    namespace: randomNamespace(),
    mode: options.quick ? 'quick' : 'grade',
    seed: options.seed,
    listener: options.listener ?? silent,
    databases: options.databases,
  });
  try {
    return await attempt.grade();
  } finally {
    await attempt.deleteTopics();
  }
}

export interface Fixture {
  lab: string;
  program: string;
  input: ProgramInput;
  expect: 'pass' | 'fail';
  check?: CheckName;
  /** A database lab's fixture graded on this pool instead of the process's (DATABASE_URL). */
  databases?: DatabasePool;
  /** Graded on the 3-node cluster (a failover lab): the slowest grades, started first. */
  threeNodes?: boolean;
  /**
   * Which plan decides a program that must fail: 'quick' (every fixture that must fail, by
   * default), or 'full' for a variant whose `// full-plan:` line says why only the full plan can
   * catch it. Never one plan and then the other: a variant the quick plan misses on some seed is
   * a wrong verdict to fix (a better-aimed fault, or the full-plan line), not a retry to hide.
   */
  failPlan?: 'full' | 'quick';
}

/** Every program a lab folder declares, with what grading it must give (the fixture matrix). */
export async function labFixtures(labIds: string[]): Promise<Fixture[]> {
  const fixtures: Fixture[] = [];
  for (const id of labIds) {
    const lab = await loadLab(id);
    const code = (file: string): ProgramInput => ({ kind: 'code', code: fs.readFileSync(file, 'utf8') });
    const threeNodes = lab.definition.cluster === 'three-nodes';
    const before = fixtures.length;
    fixtures.push(
      { lab: id, program: 'solution', input: code(lab.solutionFile), expect: 'pass' },
      { lab: id, program: 'starter', input: code(lab.starterFile), expect: 'fail' },
      // Another client's reference solution (and starter) grade like kafkajs's: solution.<client>.ts.
      ...Object.entries(lab.clients).flatMap(([client, files]) => [
        { lab: id, program: `solution.${client}`, input: code(files.solutionFile), expect: 'pass' as const },
        ...(files.starterFile ? [{ lab: id, program: `starter.${client}`, input: code(files.starterFile), expect: 'fail' as const }] : []),
      ]),
      ...lab.broken.map((b) => ({
        lab: id,
        program: `broken/${b.name}`,
        input: { kind: 'code' as const, code: b.source },
        expect: 'fail' as const,
        check: b.expectFail,
        failPlan: b.fullPlan ? ('full' as const) : ('quick' as const),
      })),
      ...lab.definition.commandFixtures.map((c) => ({ lab: id, program: `cmd/${c.name}`, input: { kind: 'command' as const, command: c.command }, expect: c.expect, check: c.check })),
    );
    if (threeNodes) for (const f of fixtures.slice(before)) f.threeNodes = true;
  }
  return fixtures;
}

/** Whether a report is what the fixture expects, and a short label of what it got. */
export function judgeFixture(fixture: Fixture, report: GradeReport): { ok: boolean; got: string } {
  const failed = report.checks.filter((c) => !c.passed).map((c) => c.name);
  const got = report.verdict === 'fail' ? `fail (${failed.join(', ')})` : report.verdict;
  const ok = fixture.expect === 'pass' ? report.verdict === 'pass' : report.verdict === 'fail' && (!fixture.check || failed.includes(fixture.check));
  return { ok, got };
}

/**
 * The fixture matrix every lab must satisfy (as Exercism does for its exercises): the solution
 * passes, the starter fails, each broken variant fails on the check its first line names, and
 * command fixtures (e.g. Kafka's own TransactionalMessageCopier) grade as declared. Fixtures run
 * a few at a time; broker restarts are serialised by the maintenance lock. (bench:grader grades
 * every program with the full plan, ten seeds each.)
 */
export async function checkLabs(labIds: string[], clusters: ClusterSource | ClusterHandle, options: CheckOptions = {}): Promise<FixtureResult[]> {
  return runFixtures(await labFixtures(labIds), clusters, options);
}

export interface CheckOptions {
  quick?: boolean;
  parallel?: number;
  log?: (line: string) => void;
  /**
   * Once the 3-node fixtures are graded, ask the cluster sources to stop that cluster: a test
   * run's pool keeps clusters until the run ends, and three idle JVMs cost a tenth of a core.
   * Not for `check --watch`, whose next save would have to start it again.
   */
  releaseThreeNodes?: boolean;
  /**
   * Where the graders take their next fixture and hand its result: by default the fixtures given,
   * in fixtureRank's order. The lab matrix's shards share one (tests/support/matrix-queue.ts), so neither
   * idles while the other still has fixtures to grade.
   */
  queue?: FixtureQueue;
}

/** A source of fixtures to grade, shared by the graders of one or more runFixtures calls. */
export interface FixtureQueue {
  /** The next fixture to grade, or undefined once there is none left for this caller. */
  take(): Promise<Fixture | undefined>;
  /** Told each result as its grade ends. */
  done?(result: FixtureResult): Promise<void>;
}

/**
 * The checks a program can fail only by stalling: before it can say so, the grader waits out the
 * lab's stall bound at least once (or its time limit), so such a fixture is among the slowest of
 * the programs that must fail.
 */
const STALL_CHECKS: ReadonlySet<CheckName> = new Set<CheckName>(['keeps-up', 'no-hanging-transactions']);

/**
 * The order fixtures are graded in: the 3-node cluster's first, so its three JVMs can stop once
 * they are graded (releaseThreeNodes); then the rest. Within each, the slowest first, so that none
 * of them is left to run alone at the end while the other graders idle: programs that must pass
 * (the full plan), then programs that must fail by stalling, then the other programs that must fail.
 */
export function fixtureRank(fixture: Pick<Fixture, 'threeNodes' | 'expect' | 'check'>): number {
  const slowness = fixture.expect === 'pass' ? 0 : fixture.check && STALL_CHECKS.has(fixture.check) ? 1 : 2;
  return (fixture.threeNodes ? 0 : 3) + slowness;
}

/**
 * The plan a fixture is graded on by `kafkaiq check` (quick: `--quick`). A program that must fail
 * takes the lab's short plan, which every variant is swept against (AUTHORING.md: ten seeds at
 * CI's load), unless its `// full-plan:` line says only the full plan can catch it (then under
 * --quick too); programs that must pass take the full plan, or the quick one under --quick.
 */
export function fixturePlan(fixture: Pick<Fixture, 'expect' | 'failPlan'>, quick: boolean): 'quick' | 'full' {
  if (fixture.expect === 'fail') return fixture.failPlan ?? 'quick';
  return quick ? 'quick' : 'full';
}

/**
 * Grades fixtures a few at a time (see checkLabs) and logs a line per fixture as it ends. Given
 * several clusters (lanes), the graders take turns over them: a broker restart one grade injects
 * then holds up only the grades on its own broker. With options.queue the graders take their
 * fixtures from it instead; `fixtures` are then the ones whose 3-node cluster this call releases,
 * and the results returned are those of the fixtures this call graded.
 */
export async function runFixtures(
  fixtures: Fixture[],
  clusters: ClusterSource | ClusterHandle | ReadonlyArray<ClusterSource | ClusterHandle>,
  options: CheckOptions = {},
): Promise<FixtureResult[]> {
  const lanes = Array.isArray(clusters) ? clusters : [clusters as ClusterSource | ClusterHandle];
  if (lanes.length === 0) throw new KafkaIqError('INTERNAL', 'runFixtures needs at least one cluster.');
  const log = options.log ?? (() => {});
  const results: FixtureResult[] = [];
  const own = [...fixtures].sort((a, b) => fixtureRank(a) - fixtureRank(b));
  const queue: FixtureQueue = options.queue ?? { take: async () => own.shift() };
  const gradeFixture = async (fixture: Fixture, lane: ClusterSource | ClusterHandle) => {
    const started = Date.now();
    let got: string;
    let ok: boolean;
    let aimed = { faults: 0, atPoint: 0 };
    try {
      const plan = fixturePlan(fixture, !!options.quick);
      const terminal = terminalTail();
      const report = await gradeProgram(lane, fixture.lab, fixture.input, { quick: plan === 'quick', databases: fixture.databases, listener: terminal.listener });
      ({ ok, got } = judgeFixture(fixture, report));
      if (fixture.expect === 'fail' && !options.quick) got += ` [${plan} plan]`;
      const aimedFaults = report.faults.filter((f) => f.aimedAt?.length);
      aimed = { faults: aimedFaults.length, atPoint: aimedFaults.filter((f) => f.landed === 'at-point').length };
      if (!ok) {
        // What CI prints must be enough to tell a grader bug from a flaky fixture: the seed,
        // and the first evidence of each check that went the wrong way.
        got += `: ${report.message} (seed ${report.seed}${report.quick ? ', quick plan' : ''})`;
        const wrongChecks = report.checks.filter((c) => (fixture.expect === 'pass' ? !c.passed : fixture.check === c.name));
        for (const check of wrongChecks) got += `\n    ${check.passed ? '✓' : '✗'} ${check.name}: ${check.summary}${check.evidence.slice(0, 3).map((e) => `\n      ${e}`).join('')}`;
        got += wrongVerdictContext(report);
        got += terminal.lines().map((line) => `\n    ${line}`).join('');
      }
    } catch (err) {
      got = `error: ${describeError(err)}`;
      ok = false;
    }
    const expected = fixture.expect === 'pass' ? 'pass' : `fail${fixture.check ? ` (${fixture.check})` : ''}`;
    const result = { lab: fixture.lab, program: fixture.program, expected, got, ok, seconds: (Date.now() - started) / 1000, aimed };
    results.push(result);
    log(`${ok ? '✓' : '✗'} ${fixture.lab.padEnd(20)} ${fixture.program.padEnd(34)} expected ${expected.padEnd(30)} got ${got}  (${result.seconds.toFixed(1)} s)`);
    await options.queue?.done?.(result);
  };
  // Once the last of them is graded, a pool that started the 3-node cluster for them may stop it.
  let threeNodesUngraded = fixtures.filter((f) => f.threeNodes).length;
  const worker = async (lane: ClusterSource | ClusterHandle) => {
    for (let fixture = await queue.take(); fixture; fixture = await queue.take()) {
      await gradeFixture(fixture, lane);
      if (fixture.threeNodes && --threeNodesUngraded === 0 && options.releaseThreeNodes) {
        for (const source of new Set(lanes.map(asClusterSource))) {
          if (source.release) await bestEffort('stop the 3-node cluster after its fixtures', () => source.release!('three-nodes'), log);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.parallel ?? 3) }, (_, i) => worker(lanes[i % lanes.length]!)));
  const bad = results.filter((r) => !r.ok);
  log(bad.length ? `\n${bad.length} of ${results.length} fixtures are wrong.` : `\nAll ${results.length} fixtures graded as expected.`);
  return results;
}

/**
 * A wrong verdict at CI load may not come back on replay (the same seed alone): where the grade's
 * time went and what happened around its faults, so the log alone can tell why.
 */
function wrongVerdictContext(report: GradeReport): string {
  const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  const phases = report.stats.phases?.map((p) => `${p.name} ${secs(p.ms)}`).join(', ');
  const faults = report.faults.map((f) => `+${secs(f.atMs)} ${f.kind} ${f.instance}${f.crashPoint ? ` at ${f.crashPoint}` : ''}${f.landed ? ` (${f.landed})` : ''}${f.note ? `: ${f.note.slice(0, 160)}` : ''}`);
  const events = report.timeline.filter((e) => e.kind !== 'commit' && e.kind !== 'wave').slice(-12).map((e) => `+${secs(e.atMs)} ${e.kind} ${e.instance}${e.detail ? ` ${e.detail.slice(0, 120)}` : ''}`);
  return [
    `\n    took ${secs(report.stats.durationMs)}, ${report.stats.restarts} restart(s), ${report.stats.selfExits} exit(s) on its own${phases ? `; phases: ${phases}` : ''}`,
    ...faults.map((line) => `\n    fault ${line}`),
    ...events.map((line) => `\n    event ${line}`),
  ].join('');
}
