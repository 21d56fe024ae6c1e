/**
 * npm run bench:grader [-- --runs N --quick-runs N --labs a,b --solutions-only --skip-starters --skip-commands --only REGEX --parallel N --sweep --first-seed S --minutes M --keep-reports]
 * Grades every program of every lab (solution, starter, broken variants, command fixtures) N
 * times with seeds S..S+N-1 (S = 1 unless --first-seed), and the solution N more times with --quick,
 * then prints per program the verdict counts against what the lab folder expects, the median and
 * worst grade time, the longest stall keeps-up saw (the measurement its bound comes from), the
 * median time per phase of a grade (stats.phases), and the whole machine's core-seconds per grade
 * (from /proc/stat: per grade with --parallel 1, else the run's total divided by its grades).
 * --sweep: every program gets both plans (default 20 full and 10 quick seeds), and each wrong
 * verdict prints the command that replays it; a broken variant with a `// full-plan:` line is
 * graded on the full plan for its quick seeds too, as CI grades it. --only: the programs whose fixture name (solution,
 * starter.platformatic, broken/x, cmd/y) matches the regular expression.
 * --minutes: a load bench of that length. Grades are taken seed by seed across every row (each row's
 * first seed, then each row's second, ...) and none starts once the time is up; rows print what
 * they graded, and the last line counts the verdicts (pass, fail, inconclusive, error) and the wrong ones.
 * Wrong verdicts, and passes whose longest pause passed half keeps-up's bound, leave their
 * report in --failures-dir (.kafkaiq/bench-failures); with --keep-reports, right verdicts do too.
 * Prints figures; asserts nothing. With --parallel > 1 grades overlap (as in CI), so the times
 * include that contention; the header says so. The rows are graded in groups of --parallel rows,
 * their seeds in turns, so the grades running at once are of several programs.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ClusterPool } from '../lab-server/broker/cluster-pool.ts';
import { formatReport } from '../src/shared/format-report.ts';
import type { GradeReport } from '../src/shared/report.ts';
import { STALL_BOUND_MS } from '../lab-server/runner/pipeline/liveness.ts';
import type { SessionListener } from '../lab-server/runner/contract.ts';
import { connectCluster } from '../lab-server/broker/cluster.ts';
import { describeError } from '../src/shared/errors.ts';
import { listLabIds } from '../lab-server/labs/load-lab.ts';
import { gradeProgram, judgeFixture, labFixtures, type Fixture } from '../lab-server/runner/check-labs.ts';
import { phaseTotals } from '../lab-server/runner/phase-clock.ts';
import { machineCpuSeconds } from './machine-cpu.ts';
import { median } from './median.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string' },
    'quick-runs': { type: 'string' },
    sweep: { type: 'boolean', default: false },
    'first-seed': { type: 'string', default: '1' },
    labs: { type: 'string' },
    'solutions-only': { type: 'boolean', default: false },
    'skip-starters': { type: 'boolean', default: false },
    'skip-commands': { type: 'boolean', default: false },
    only: { type: 'string' },
    parallel: { type: 'string', default: '1' },
    'failures-dir': { type: 'string', default: '.kafkaiq/bench-failures' },
    'keep-reports': { type: 'boolean', default: false },
    minutes: { type: 'string' },
  },
});
const sweep = values.sweep!;
const runs = Number(values.runs ?? (sweep ? 20 : 10));
const quickRuns = Number(values['quick-runs'] ?? 10);
const firstSeed = Number(values['first-seed']);
const parallel = Math.max(1, Number(values.parallel));
const deadline = values.minutes ? Date.now() + Number(values.minutes) * 60_000 : Infinity;
const labs = values.labs ? values.labs.split(',') : listLabIds();
// Each lab on the cluster it declares (the failover labs on the 3-node cluster, started on first use).
const cluster = new ClusterPool();

interface Row {
  fixture: Fixture;
  mode: 'full' | 'quick';
  runs: number;
  right: number;
  got: Map<string, number>;
  times: number[];
  stalls: number[];
  replays: string[];
  /** Per grade: milliseconds per kind of stretch (stats.phases, faults summed per kind). */
  phases: Map<string, number>[];
  /** Per grade, when grades do not overlap: the machine's core-seconds. */
  cpu: number[];
}
const fixtures = (await labFixtures(labs))
  .filter((f) => !values['solutions-only'] || f.program.startsWith('solution'))
  .filter((f) => !values['skip-starters'] || f.program !== 'starter')
  .filter((f) => !values['skip-commands'] || f.input.kind !== 'command')
  .filter((f) => !values.only || new RegExp(values.only).test(f.program));
const rows: Row[] = [];
const jobs: { row: Row; seed: number }[] = [];
for (const fixture of fixtures) {
  const quickCount = sweep || fixture.program.startsWith('solution') ? quickRuns : 0;
  // A variant CI grades on the full plan (its `// full-plan:` line) is swept there: its quick seeds too.
  const counts = fixture.failPlan === 'full' ? ([['full', runs + quickCount]] as const) : ([['full', runs], ['quick', quickCount]] as const);
  for (const [mode, count] of counts) {
    if (!count) continue;
    const row: Row = { fixture, mode, runs: count, right: 0, got: new Map(), times: [], stalls: [], replays: [], phases: [], cpu: [] };
    rows.push(row);
    for (let seed = firstSeed; seed < firstSeed + count; seed++) jobs.push({ row, seed });
  }
}
// Rows in groups of --parallel, their seeds taken in turns: the grades running at once are of
// several programs, as in CI's lab matrix, not the ten seeds of one (ten full plans of one
// variant restart the shared broker ten times at once). A group's rows end together, and print.
const rowIndex = new Map(rows.map((row, i) => [row, i]));
const groupOf = (row: Row) => Math.floor(rowIndex.get(row)! / parallel);
// A load bench with a time limit takes every row's first seed before any row's second, so whatever
// it reaches in the time covers every program.
if (values.minutes) jobs.sort((a, b) => a.seed - b.seed || rowIndex.get(a.row)! - rowIndex.get(b.row)!);
else jobs.sort((a, b) => groupOf(a.row) - groupOf(b.row) || a.seed - b.seed || rowIndex.get(a.row)! - rowIndex.get(b.row)!);

const started = Date.now();
const machineCpu = machineCpuSeconds();
console.log(`${values.minutes ? `for ${values.minutes} minutes, up to ` : ''}${jobs.length} grades, ${parallel} at a time${parallel > 1 ? ' (times include the contention of overlapping grades)' : ''}\n`);
/** Every grade's verdict, and whether it was what the lab folder expects. */
const verdicts = new Map<string, number>();
let wrongGrades = 0;
const print = (row: Row) => {
  const expected = row.fixture.expect === 'pass' ? 'pass' : `fail${row.fixture.check ? `:${row.fixture.check}` : ''}`;
  const got = [...row.got].map(([v, n]) => `${v} ${n}`).join(', ');
  console.log(
    `${`${row.fixture.lab}/${row.fixture.program}`.padEnd(44)} ${row.mode.padEnd(5)} expect ${expected.padEnd(28)} right ${String(row.right).padStart(2)}/${row.times.length}` +
      `  median ${(median(row.times) / 1000).toFixed(1).padStart(5)} s  worst ${(Math.max(...row.times) / 1000).toFixed(1).padStart(5)} s` +
      `  longest stall ${row.stalls.length ? `${(Math.max(...row.stalls) / 1000).toFixed(1).padStart(4)} s` : '   - '}  got ${got}`,
  );
  if (row.cpu.length) console.log(`    core-seconds per grade (whole machine): median ${median(row.cpu).toFixed(1)}, worst ${Math.max(...row.cpu).toFixed(1)}`);
  const kinds = [...new Set(row.phases.flatMap((p) => [...p.keys()]))];
  if (kinds.length) console.log(`    median per phase: ${kinds.map((k) => `${k} ${(median(row.phases.map((p) => p.get(k) ?? 0)) / 1000).toFixed(1)} s`).join(', ')}`);
  for (const replay of row.replays) console.log(`    replay: ${replay}`);
};
/** Writes a grade's report and the last lines of output to the failures dir, for diagnosis. */
function saveReport(row: Row, seed: number, report: GradeReport, tail: string[], why: 'wrong' | 'near-stall' | 'right'): void {
  const dir = path.resolve(values['failures-dir']!);
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${row.fixture.lab}-${row.fixture.program.replace(/\//g, '-')}-${row.mode}-seed${seed}${why === 'wrong' ? '' : `-${why}`}.txt`);
  fs.writeFileSync(file, `${formatReport(report)}\n\n---- last output ----\n${tail.join('\n')}\n\n---- report ----\n${JSON.stringify(report, null, 1)}\n`);
}

/** The file a fixture's program lives in (solution, starter, broken/x), for a replay command; null for --cmd. */
const programFile = (f: Fixture) => {
  if (f.input.kind === 'command') return null;
  const ts = `labs/${f.lab}/${f.program}.ts`;
  // A broken variant declared as a mistake made to its solution (src/shared/mistake.ts).
  return fs.existsSync(ts) ? ts : `labs/${f.lab}/${f.program}.diff`;
};
const queue = [...jobs];
await Promise.all(
  Array.from({ length: parallel }, async () => {
    for (let job = queue.shift(); job && Date.now() < deadline; job = queue.shift()) {
      const { row, seed } = job;
      const t0 = Date.now();
      let label: string;
      // The program's and the grader's last lines, kept so a wrong verdict can be diagnosed later.
      const tail: string[] = [];
      const listener: SessionListener = {
        output: (instance, stream, line) => {
          tail.push(`${instance.padEnd(6)} ${stream === 'system' ? '' : `${stream} `}${line}`);
          if (tail.length > 400) tail.shift();
        },
        diagnostics: () => {},
        progress: () => {},
        state: () => {},
        fault: () => {},
      };
      try {
        const cpuBefore = machineCpuSeconds();
        const report = await gradeProgram(cluster, row.fixture.lab, row.fixture.input, { seed, quick: row.mode === 'quick', listener });
        const cpuAfter = machineCpuSeconds();
        // A grade's own cost only when no other grade of the bench overlaps it.
        if (parallel === 1 && cpuBefore !== null && cpuAfter !== null) row.cpu.push(cpuAfter - cpuBefore);
        if (report.stats.phases) row.phases.push(phaseTotals(report.stats.phases));
        const judged = judgeFixture(row.fixture, report);
        verdicts.set(report.verdict, (verdicts.get(report.verdict) ?? 0) + 1);
        if (!judged.ok) wrongGrades++;
        if (report.stats.longestStallMs !== undefined) row.stalls.push(report.stats.longestStallMs);
        // A right verdict whose longest pause came near keeps-up's bound is kept too: it is the
        // measurement the bound rests on, and the timeline shows what the program was waiting for.
        const nearStall = judged.ok && row.fixture.expect === 'pass' && (report.stats.longestStallMs ?? 0) > STALL_BOUND_MS / 2;
        if (nearStall) saveReport(row, seed, report, tail, 'near-stall');
        if (judged.ok) {
          row.right++;
          if (values['keep-reports'] && !nearStall) saveReport(row, seed, report, tail, 'right');
        } else {
          const program = programFile(row.fixture);
          const quick = row.mode === 'quick' ? ' --quick' : '';
          row.replays.push(
            program
              ? `npx kafkaiq grade ${row.fixture.lab} ${program} --seed ${seed}${quick}   (got ${judged.got})`
              : `npx kafkaiq grade ${row.fixture.lab} --cmd '<${row.fixture.program}>' --seed ${seed}${quick}   (got ${judged.got})`,
          );
          saveReport(row, seed, report, tail, 'wrong');
        }
        label = `${judged.got}${judged.ok ? '' : ` [seed ${seed}]`}`;
      } catch (err) {
        verdicts.set('error', (verdicts.get('error') ?? 0) + 1);
        wrongGrades++;
        label = `error: ${describeError(err)} [seed ${seed}]`;
      }
      row.times.push(Date.now() - t0);
      row.got.set(label, (row.got.get(label) ?? 0) + 1);
      if (row.times.length === row.runs) print(row);
    }
  }),
);
// Under --minutes most rows end part-way: print what each graded.
if (values.minutes) for (const row of rows) if (row.times.length > 0 && row.times.length < row.runs) print(row);
const graded = rows.reduce((n, row) => n + row.times.length, 0);
console.log(`\nVerdicts of ${graded} grades: ${(['pass', 'fail', 'inconclusive', 'error'] as const).map((v) => `${v} ${verdicts.get(v) ?? 0}`).join(', ')}; wrong ${wrongGrades}.`);
const cpuTotal = machineCpu === null ? null : (machineCpuSeconds() ?? machineCpu) - machineCpu;
console.log(`\nTotal ${((Date.now() - started) / 60_000).toFixed(1)} min${cpuTotal === null ? '' : `, ${cpuTotal.toFixed(0)} core-seconds (${(cpuTotal / Math.max(1, graded)).toFixed(1)} per grade, whole machine)`}. Wrong: ${rows.filter((r) => r.right < r.times.length).length} of ${rows.filter((r) => r.times.length > 0).length} program rows.`);
await cluster.close();
