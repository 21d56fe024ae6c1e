/**
 * npm run bench:capacity [-- --saturation-minutes 3 --step-minutes 4 --steps 0.5,0.7,0.85,1 --seed 1]
 * How many grades per hour one lab server serves while a grade's queue wait stays under 60 s.
 *
 * The real server (`npm start`'s entry point, its default admission limits, which follow the
 * machine's cores) on the real broker, each learner a WebSocket of its own from an address of its
 * own (X-Forwarded-For through a trusted proxy, as behind nginx). Each grade is drawn, with even
 * odds, from the single-stage solution and its starter, on the full plan (the one that counts a
 * pass) or the quick one: the mix a class sends.
 *  1. Saturation: twice as many learners as grades run at once, each grading again as soon as its
 *     report arrives, for --saturation-minutes. Completed grades per hour is the server's
 *     throughput, the most it could ever serve.
 *  2. Steps: learners arrive at random (a seeded Poisson process) at each fraction of that
 *     throughput in --steps, back to back for --step-minutes each, so a step inherits the queue
 *     the one before left. A grade's queue wait is the time from "grade" sent until the server
 *     starts it. The steps stop after the first whose longest wait reached 60 s.
 * Prints per step the arrival rate, per core, verdicts, the median, 95th percentile and longest
 * queue wait and the median grade time; then the highest rate whose longest wait stayed under 60 s.
 * Asserts nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { connectCluster } from '../lab-server/broker/cluster.ts';
import { ROOT_DIR } from '../lab-server/core/paths.ts';
import { defaultLimits } from '../lab-server/server/admission.ts';
import { seededRandom } from '../lab-server/runner/fault-plan.ts';
import { startCourseServer } from '../tests/support/course-server.ts';
import { Learner } from '../tests/security/support.ts';
import { median } from './median.ts';

const { values } = parseArgs({
  options: {
    'saturation-minutes': { type: 'string', default: '3' },
    'step-minutes': { type: 'string', default: '4' },
    steps: { type: 'string', default: '0.5,0.7,0.85,1' },
    seed: { type: 'string', default: '1' },
  },
});
const WAIT_BOUND_MS = 60_000;
const saturationMs = Number(values['saturation-minutes']) * 60_000;
const stepMs = Number(values['step-minutes']) * 60_000;
const fractions = values.steps!.split(',').map(Number);
const cores = availableParallelism();
const concurrent = defaultLimits(cores).concurrentGrades;

// Seeded as the fault plans are, so two runs draw the same arrivals and programs.
const random = seededRandom(Number(values.seed));
const programs = {
  solution: fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/solution.ts'), 'utf8'),
  starter: fs.readFileSync(path.join(ROOT_DIR, 'labs/single-stage/starter.ts'), 'utf8'),
};

interface Graded {
  program: keyof typeof programs;
  quick: boolean;
  verdict: string;
  /** From "grade" sent until the server started it. */
  waitMs: number;
  /** From the start until the report. */
  gradeMs: number;
  finishedAt: number;
}

/** Grades sent and not started yet: when each was sent, for the live look at queue waits. */
const waitingSince = new Set<number>();
let learnersSoFar = 0;
/** One learner connects from an address of its own, grades one drawn program, and leaves. */
async function gradeOnce(serverUrl: string): Promise<Graded> {
  const n = ++learnersSoFar;
  const program = random() < 0.5 ? 'solution' : 'starter';
  const quick = random() < 0.5;
  const learner = await Learner.connect(serverUrl, { 'X-Forwarded-For': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` });
  const sent = Date.now();
  waitingSince.add(sent);
  try {
    const from = learner.messages.length;
    const reported = learner.grade(programs[program], quick, 30 * 60_000);
    // Started: admitted from the queue (position 0), or straight away (the grade's first state).
    await learner.until((m) => (m.type === 'queue' && m.position === 0) || (m.type === 'state' && m.activity === 'grading') || m.type === 'report' || m.type === 'error', 30 * 60_000, from);
    const started = Date.now();
    waitingSince.delete(sent);
    const report = await reported.catch((err: Error) => ({ verdict: `refused (${err.message})` }));
    return { program, quick, verdict: report.verdict, waitMs: started - sent, gradeMs: Date.now() - started, finishedAt: Date.now() };
  } finally {
    waitingSince.delete(sent);
    learner.close();
  }
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0;
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const verdicts = (gs: Graded[]) => {
  const counts = new Map<string, number>();
  for (const g of gs) counts.set(g.verdict, (counts.get(g.verdict) ?? 0) + 1);
  return [...counts].map(([v, n]) => `${v} ${n}`).join(', ');
};

const cluster = await connectCluster();
const server = await startCourseServer(cluster.brokers, 'start', { env: { KAFKAIQ_TRUST_PROXY: '1', KAFKAIQ_MULTI_USER: '1' } });
try {
  console.log(`${cores} cores; the server grades ${concurrent} at once (its default for this machine), the rest queue`);

  // 1. Saturation: a closed loop of 2 x concurrent learners.
  const saturationEnd = Date.now() + saturationMs;
  const measureFrom = Date.now() + Math.min(60_000, saturationMs / 3); // the first minute fills the pipeline: not counted
  const saturated: Graded[] = [];
  await Promise.all(
    Array.from({ length: 2 * concurrent }, async () => {
      while (Date.now() < saturationEnd) saturated.push(await gradeOnce(server.url));
    }),
  );
  const counted = saturated.filter((g) => g.finishedAt >= measureFrom && g.finishedAt <= saturationEnd);
  const throughputPerHour = (counted.length / ((saturationEnd - measureFrom) / 3_600_000));
  console.log(
    `saturation: ${saturated.length} grades (${verdicts(saturated)}), ${counted.length} finished in the last ${seconds(saturationEnd - measureFrom)}: ` +
      `${throughputPerHour.toFixed(0)} grades per hour, ${(throughputPerHour / cores).toFixed(0)} per core; median grade ${seconds(median(saturated.map((g) => g.gradeMs)))} with ${concurrent} at once`,
  );

  // 2. Open-loop steps at fractions of the throughput, back to back: arrivals never wait for reports.
  const steps: { fraction: number; ratePerHour: number; grades: Promise<Graded>[] }[] = [];
  for (const fraction of fractions) {
    const step = { fraction, ratePerHour: throughputPerHour * fraction, grades: [] as Promise<Graded>[] };
    steps.push(step);
    const stepEnd = Date.now() + stepMs;
    for (let next = Date.now(); ; ) {
      next += (-Math.log(1 - random()) / step.ratePerHour) * 3_600_000; // exponential gaps: Poisson arrivals
      if (next >= stepEnd) break;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, next - Date.now())));
      step.grades.push(gradeOnce(server.url));
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, stepEnd - Date.now())));
    // A grade still queued for 60 s already breaks the bound: no higher step can keep it.
    const oldestWait = Date.now() - Math.min(Date.now(), ...waitingSince);
    if (oldestWait >= WAIT_BOUND_MS) break;
  }
  let capacity: number | null = null;
  let held = true;
  for (const step of steps) {
    const results = await Promise.all(step.grades);
    const waits = results.map((g) => g.waitMs);
    // A grade refused (the queue full: BUSY) waited for nothing: the step did not serve it at all.
    const refused = results.filter((g) => g.verdict.startsWith('refused')).length;
    const longest = refused ? Infinity : Math.max(0, ...waits);
    console.log(
      `${`${(step.fraction * 100).toFixed(0)}%`.padStart(4)} of throughput: ${step.ratePerHour.toFixed(0)} grades/hour (${(step.ratePerHour / cores).toFixed(0)} per core), ${results.length} arrived (${verdicts(results)}); ` +
        `queue wait median ${seconds(median(waits))}, 95th ${seconds(percentile(waits, 0.95))}, longest ${seconds(Math.max(0, ...waits))}${refused ? `, ${refused} refused` : ''}; median grade ${seconds(median(results.map((g) => g.gradeMs)))}`,
    );
    held &&= longest < WAIT_BOUND_MS;
    if (held) capacity = step.ratePerHour;
  }
  console.log(
    capacity === null
      ? `capacity: no step kept every queue wait under ${WAIT_BOUND_MS / 1000} s`
      : `capacity: ${capacity.toFixed(0)} grades per hour (${(capacity / cores).toFixed(0)} per core) with every queue wait under ${WAIT_BOUND_MS / 1000} s`,
  );
} finally {
  await server.stop();
  await cluster.close();
}
