/**
 * The throughput requirement of performance labs (`throughput` in lab.ts, check
 * `throughput-speedup`). Before the fault plan, in the same grade, the grader times two programs
 * side by side on the same kind of input: the lab's baseline program (a correct but slow pipeline
 * kept in the lab folder) and the learner's program, each on its own namespaced topics, group
 * and transactional ids, so nothing here touches the topics that the no-loss / no-duplicates
 * accounting reads later.
 *
 * Each program first gets a few warm-up records (once it has processed them, it has started,
 * joined its group and set up its producer), then a burst of N records written in ONE committed
 * transaction, so the burst becomes visible to read_committed consumers all at once. Its time
 * runs from that commit until the group's committed offsets cover the burst, or for a window of
 * a few seconds, the same for both, if it is not done by then (it is rated on what it finished).
 * Both bursts are committed at the same moment: on a busy machine the load comes and goes within
 * seconds, and two programs timed together see the same load, so the RATIO of their rates stays
 * meaningful where an absolute records/s figure would not.
 */
import { bestEffort } from '../../core/best-effort.ts';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, Kafka } from 'kafkajs';
import type { PipelineLab, ThroughputSpec } from '../../../src/shared/lab.ts';
import type { CheckResult } from '../../../src/shared/report.ts';
import { KafkaIqError } from '../../../src/shared/errors.ts';
import { maintenanceFor } from '../../broker/maintenance.ts';
import { fetchCommittedOffsets } from '../../kafka/group-offsets.ts';
import { createTopics } from '../../kafka/topics.ts';
import { compileProgram } from '../program/compile.ts';
import type { ProgramSource } from '../program/program-instance.ts';
import { InputWriter, planSeedTransactions, type SeedTransaction } from '../seeder.ts';
import { Supervisor, type RestartPolicy } from '../program/supervisor.ts';

/** One program's timing on the burst. */
export interface BurstTiming {
  /** Records in the burst. */
  records: number;
  /** How many of them the group's committed offsets covered when the timing ended. */
  processed: number;
  /** From the burst's commit until all were covered, or until the end of the window. */
  ms: number;
}

/** Records per second; a timing under a millisecond counts as one millisecond. */
export function burstRate(t: BurstTiming): number {
  return t.processed / (Math.max(1, t.ms) / 1000);
}

/**
 * The longest the learner's burst of N records may take and still pass:
 * N / t >= k x baseline rate, i.e. t <= N / (k x baseline rate) (both bursts have the same N).
 */
export function allowedMs(baseline: BurstTiming, minSpeedup: number): number {
  return (1000 * baseline.records) / (minSpeedup * burstRate(baseline));
}

const rateText = (r: number) => (r >= 100 ? `${Math.round(r)}` : r.toFixed(1));
const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const times = (x: number) => `${x >= 10 ? x.toFixed(0) : x.toFixed(1)}x`;

/** One program's timing, in words: all of the burst, or the part it finished within the window. */
function describeTiming(who: string, t: BurstTiming): string {
  const rate = `${rateText(burstRate(t))} records/s`;
  return t.processed >= t.records
    ? `${who}: all ${t.records} records in ${seconds(t.ms)} = ${rate}`
    : `${who}: ${t.processed} of ${t.records} records within the ${seconds(t.ms)} window = ${rate}`;
}

/**
 * Decides `throughput-speedup` from the two timings (or from why the learner's program could not
 * be timed). Pure, so the verdict and its wording are unit-tested.
 */
export function checkThroughput(minSpeedup: number, baseline: BurstTiming, learner: BurstTiming | { problem: string }): CheckResult {
  const baseRate = burstRate(baseline);
  const needed = baseRate * minSpeedup;
  const requirement = `at least ${minSpeedup}x the baseline's rate required, i.e. ${rateText(needed)} records/s (all ${baseline.records} records within ${seconds(allowedMs(baseline, minSpeedup))})`;
  const how =
    `both programs ran side by side, each on topics of its own with no faults, each timed from the commit of its burst of ${baseline.records} records ` +
    `(one transaction) until its group's committed offsets covered them, or for the same window if it was not done by then`;
  const evidence = [describeTiming('baseline program', baseline)];
  if ('problem' in learner) {
    return {
      name: 'throughput-speedup',
      passed: false,
      summary: `your program could not be timed: ${learner.problem}`,
      evidence: [...evidence, `your program: ${learner.problem}`, requirement, how],
    };
  }
  const rate = burstRate(learner);
  const ratio = rate / baseRate;
  const passed = rate >= needed;
  evidence.push(describeTiming('your program', learner), `speed-up: ${times(ratio)} (${rateText(rate)} / ${rateText(baseRate)} records/s); ${requirement}`, how);
  return {
    name: 'throughput-speedup',
    passed,
    summary: `${passed ? '' : 'only '}${times(ratio)} the baseline's throughput (${rateText(rate)} vs ${rateText(baseRate)} records/s), at least ${minSpeedup}x required`,
    evidence,
  };
}

/** Warm-up and burst transactions for one program: a few records per input partition, then N. */
export function planBurst(lab: PipelineLab, records: number): { warmup: SeedTransaction; burst: SeedTransaction } {
  const warmupSize = (topic: string) => lab.topics.find((t) => t.name === topic)!.partitions;
  // One seeding transaction per input seed, warm-up and burst together so every value is unique;
  // nothing is aborted (abortEvery beyond reach). Split each into its warm-up head and burst tail.
  const seeds = lab.seeds.map((s) => ({ ...s, records: warmupSize(s.topic) + records, transactionSize: warmupSize(s.topic) + records, abortEvery: 1_000_000 }));
  const warmup: SeedTransaction = { records: [], commit: true };
  const burst: SeedTransaction = { records: [], commit: true };
  for (const txn of planSeedTransactions({ ...lab, seeds })) {
    const head = warmupSize(txn.records[0]!.topic);
    warmup.records.push(...txn.records.slice(0, head));
    burst.records.push(...txn.records.slice(head));
  }
  return { warmup, burst };
}

export interface ThroughputContext {
  /** The lab's folder (for its baseline program) and definition. */
  lab: { dir: string; definition: PipelineLab };
  kafka: Kafka;
  brokers: string[];
  /** The attempt's namespace; the two measurement namespaces derive from it. */
  namespace: string;
  /** The grader's prefix: its seeding producers' ids stay outside the learner's grants. */
  graderId: string;
  learner: ProgramSource;
  /** The env a program gets when its topics, group and transactional ids live under `namespace`. */
  env: (namespace: string) => Record<string, string>;
  /** Scratch folder for the baseline's bundle. */
  workDir: string;
  system: (line: string) => void;
  /** The learner's output lines during the measurement (the baseline's are not shown). */
  output: (instance: string, stream: 'stdout' | 'stderr', line: string) => void;
}

export interface ThroughputResult {
  check: CheckResult;
  baseline: BurstTiming;
  learner: BurstTiming | null;
}

const WARMUP_LIMIT_MS = 30_000;
const PARTIAL_WARMUP_MS = 1_500;
/**
 * Both bursts are timed over the same window: a program that finishes earlier is timed to its
 * last offset commit; one that does not is rated on what it finished within the window. The
 * lab's burst should be big enough that the baseline never finishes it within the window, so the
 * two always run side by side for the baseline's whole timing.
 */
const WINDOW_MS = 3_000;
/** The window is stretched until the baseline has done at least this much (a crawling machine)... */
const BASELINE_MIN_RECORDS = 6;
/** ...up to this limit; past it, the grader gives up (an infrastructure error, not the learner's). */
const HARD_LIMIT_MS = 60_000;
const POLL_MS = 10;
const MAX_RESTARTS = 3;

/** One measured program: its process (restarted a few times if it exits), input writer and group. */
class Lane {
  readonly groupId: string;
  readonly writer: InputWriter;
  /** The lane's process, under the same supervisor as an attempt's instances (one slot, at most MAX_RESTARTS restarts). */
  private readonly supervisor: Supervisor;
  /** How each exit happened, and the last lines on stderr: why a lane failed, for the message. */
  private readonly exits: string[] = [];
  private readonly stderrTail: string[] = [];

  constructor(
    readonly name: string,
    readonly namespace: string,
    private readonly ctx: ThroughputContext,
    source: ProgramSource,
    private readonly showOutput: boolean,
  ) {
    this.groupId = `${namespace}-group`;
    this.writer = new InputWriter(ctx.kafka, `${ctx.graderId}-${name}-seeder`, (t) => this.topic(t));
    const restart: RestartPolicy = (_slot, code, signal) => {
      this.exits.push(signal ?? `code ${code}`);
      if (this.supervisor.restarts >= MAX_RESTARTS) return null;
      if (this.showOutput) this.ctx.system(`${this.name} exited (${signal ?? `code ${code}`}) during the throughput measurement; restarting it.`);
      return { delayMs: 250 };
    };
    this.supervisor = new Supervisor(
      () => source,
      {
        env: () => ctx.env(namespace),
        instanceId: () => name,
        line: (_instance, stream, line) => {
          if (stream === 'stderr' && line.trim()) {
            this.stderrTail.push(line.trim().slice(0, 300));
            if (this.stderrTail.length > 3) this.stderrTail.shift();
          }
          if (this.showOutput) this.ctx.output(this.name, stream, line);
        },
      },
      restart,
    );
  }

  topic(logical: string): string {
    return `${this.namespace}-${logical}`;
  }

  start(): void {
    this.supervisor.start(1);
  }

  get alive(): boolean {
    return this.supervisor.running;
  }

  /** Why this lane may have failed, as a parenthesis for an error message ('' if nothing to say). */
  diagnosis(): string {
    const parts = [
      ...(this.exits.length ? [`exits: ${this.exits.join(', ')}`] : []),
      ...(this.stderrTail.length ? [`last errors: ${this.stderrTail.join(' | ')}`] : []),
    ];
    return parts.length ? ` (${parts.join('; ')})` : '';
  }

  async stop(): Promise<void> {
    // SIGKILL (no grace): the lane's topics, group and transactional ids are thrown away, nothing to tidy.
    await this.supervisor.killAll();
  }

  /** How many of `records` (indices) the group's committed offsets cover. */
  async covered(admin: Admin, records: ReadonlySet<number>): Promise<number> {
    const inputs = [...new Set(this.writer.written.filter((r) => records.has(r.index)).map((r) => r.topic))];
    const committed = new Map<string, number>();
    for (const topic of inputs) {
      for (const p of await fetchCommittedOffsets(admin, this.groupId, this.topic(topic))) committed.set(`${topic}/${p.partition}`, p.offset);
    }
    return this.writer.written.filter((r) => records.has(r.index) && r.offset < (committed.get(`${r.topic}/${r.partition}`) ?? -1)).length;
  }
}

/**
 * Waits for the warm-up: until the lane's group covers all `records`, or `until` (epoch ms), or
 * the lane gave up. A program that commits some of them and then stalls (offsets committed for
 * one partition only, say) is up and running all the same: it gets a moment, then its timing.
 */
async function waitWarm(admin: Admin, lane: Lane, records: ReadonlySet<number>, until: number, acceptPartial: boolean): Promise<{ processed: number }> {
  let someSince = 0;
  for (;;) {
    // A poll the broker did not answer counts as no progress yet: the loop asks again until its limit.
    const processed = await lane.covered(admin, records).catch(() => 0);
    if (processed > 0) someSince ||= Date.now();
    const partialWillDo = acceptPartial && someSince > 0 && Date.now() - someSince > PARTIAL_WARMUP_MS;
    if (processed >= records.size || Date.now() >= until || !lane.alive || partialWillDo) return { processed };
    await sleep(POLL_MS);
  }
}

/** Writes the burst, returning the moment its transaction committed (performance.now()). */
async function writeBurst(lane: Lane, burst: SeedTransaction): Promise<number> {
  await lane.writer.write([burst]);
  return performance.now();
}

/**
 * Times the baseline and the learner's program side by side, and decides `throughput-speedup`.
 * Throws an infrastructure error if the baseline itself cannot be timed (never the learner's fault).
 */
export async function measureThroughput(ctx: ThroughputContext): Promise<ThroughputResult> {
  const spec: ThroughputSpec = ctx.lab.definition.throughput!;
  const def = ctx.lab.definition;
  const { warmup, burst } = planBurst(def, spec.records);
  const warmupIds = new Set(warmup.records.map((r) => r.index));
  const burstIds = new Set(burst.records.map((r) => r.index));
  const total = burst.records.length;

  const code = fs.readFileSync(path.join(ctx.lab.dir, spec.baseline), 'utf8');
  const baselineDir = path.join(ctx.workDir, 'baseline');
  fs.mkdirSync(baselineDir, { recursive: true });
  const compiled = await compileProgram(code, baselineDir);
  const baseline = new Lane('baseline', `${ctx.namespace}-base`, ctx, { kind: 'bundle', file: compiled.file, readDirs: compiled.readDirs, writeDir: baselineDir }, false);
  const learner = new Lane('speed', `${ctx.namespace}-speed`, ctx, ctx.learner, true);
  const lanes = [baseline, learner];
  const admin = ctx.kafka.admin();
  const began = Date.now();

  ctx.system(
    `Throughput: timing the baseline program and yours side by side, each on a burst of ${total} records committed in one transaction (topics of their own, no faults); yours must reach ${spec.minSpeedup}x the baseline's records/s.`,
  );
  // No broker restart of a parallel attempt may land inside a timing: hold the shared lease.
  return maintenanceFor(ctx.brokers).withShared(async () => {
    try {
      await createTopics(ctx.kafka, lanes.flatMap((lane) => def.topics.map((t) => ({ topic: lane.topic(t.name), numPartitions: t.partitions }))));
      await admin.connect();
      await Promise.all(lanes.map((lane) => lane.writer.connect()));
      // Both start together (a Node start and a group join each) and warm up side by side.
      for (const lane of lanes) lane.start();
      await Promise.all(lanes.map((lane) => lane.writer.write([warmup])));
      // The baseline commits every offset, so it must cover the whole warm-up (on a crawling
      // machine that takes a while); the learner's program may be the kind that never does.
      const warmed = await Promise.all(lanes.map((lane) => waitWarm(admin, lane, warmupIds, Date.now() + WARMUP_LIMIT_MS, lane === learner)));
      if (warmed[0]!.processed < warmupIds.size) {
        // The baseline is known to commit every offset: short of that, the grader is in trouble.
        throw new KafkaIqError('INTERNAL', `the baseline program ${baseline.alive ? `did not process its warm-up records within ${WARMUP_LIMIT_MS / 1000} s` : 'kept exiting before it had processed its warm-up records'}${baseline.diagnosis()}`);
      }

      // Both bursts are committed at the same moment and timed side by side over the same window:
      // the load of a busy machine comes and goes within seconds, and two programs running at the
      // same time see the same load.
      const learnerReady = warmed[1]!.processed > 0;
      const timed = learnerReady ? lanes : [baseline];
      const starts = await Promise.all(timed.map((lane) => writeBurst(lane, burst)));
      const windowStart = Math.max(...starts);
      const finished = new Map<Lane, BurstTiming>();
      const progress = new Map<Lane, number>(timed.map((lane) => [lane, 0]));
      for (;;) {
        for (const [i, lane] of timed.entries()) {
          if (finished.has(lane)) continue;
          // A poll the broker did not answer keeps the last figure: the loop asks again.
          const processed = await lane.covered(admin, burstIds).catch(() => progress.get(lane)!);
          progress.set(lane, processed);
          if (processed >= total) finished.set(lane, { records: total, processed, ms: performance.now() - starts[i]! });
        }
        const elapsed = performance.now() - windowStart;
        if (finished.size === timed.length) break;
        if (elapsed >= WINDOW_MS && progress.get(baseline)! >= BASELINE_MIN_RECORDS) break;
        if (elapsed >= HARD_LIMIT_MS || !baseline.alive) {
          throw new KafkaIqError('INTERNAL', `the baseline program processed only ${progress.get(baseline)} of ${total} burst records in ${(elapsed / 1000).toFixed(1)} s${baseline.diagnosis()}`);
        }
        await sleep(POLL_MS);
      }
      const windowEnd = performance.now();
      const timing = (lane: Lane, i: number): BurstTiming => finished.get(lane) ?? { records: total, processed: progress.get(lane)!, ms: windowEnd - starts[i]! };
      const baseTiming = timing(baseline, 0);
      const learnerTiming = learnerReady ? timing(learner, 1) : null;
      let check: CheckResult;
      if (!learnerReady) {
        const why = !learner.alive
          ? `it kept exiting before it had processed the first records${learner.diagnosis()}`
          : `it committed no offsets for its first ${warmupIds.size} records within ${WARMUP_LIMIT_MS / 1000} s (does it subscribe with fromBeginning: true, and commit the offsets?)`;
        check = checkThroughput(spec.minSpeedup, baseTiming, { problem: why });
      } else {
        check = checkThroughput(spec.minSpeedup, baseTiming, learnerTiming!);
      }
      ctx.system(`Throughput: ${check.summary} (measured in ${((Date.now() - began) / 1000).toFixed(1)} s).`);
      return { check, baseline: baseTiming, learner: learnerTiming };
    } finally {
      await Promise.all(lanes.map((lane) => lane.stop()));
      await Promise.all(lanes.map((lane) => lane.writer.disconnect()));
      await bestEffort('delete the throughput topics', admin.deleteTopics({ topics: lanes.flatMap((lane) => def.topics.map((t) => lane.topic(t.name))), timeout: 5_000 }), ctx.system);
      await bestEffort('disconnect the throughput admin', admin.disconnect(), ctx.system);
    }
  });
}
