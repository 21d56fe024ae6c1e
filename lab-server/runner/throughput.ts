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
 * runs from that commit until the group's committed offsets cover the burst. Both bursts are
 * committed at the same moment: on a busy machine the load comes and goes within seconds, and two
 * programs timed together see the same load, so the RATIO of their rates stays meaningful where
 * an absolute records/s figure would not. The baseline is slow and steady, so on a crawling
 * machine its rate is taken from the part of the burst it finished within a window.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, Kafka } from 'kafkajs';
import type { LabDefinition, ThroughputSpec } from '../../src/shared/lab.ts';
import type { CheckResult } from '../../src/shared/report.ts';
import { describeError, KafkaIqError } from '../core/errors.ts';
import { retry } from '../core/retry.ts';
import { brokerMaintenance } from '../broker/maintenance.ts';
import type { LoadedLab } from '../labs/load-lab.ts';
import { compileProgram } from './compile.ts';
import { ProgramInstance, type ProgramSource } from './program-instance.ts';
import { InputWriter, planSeedTransactions, type SeedTransaction } from './seeder.ts';

/** One program's timing on the burst. */
export interface BurstTiming {
  /** Records in the burst. */
  records: number;
  /** How many of them the group's committed offsets covered when the timing ended. */
  processed: number;
  /** From the burst's commit until all were covered, or until the grader stopped waiting. */
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

/**
 * Decides `throughput-speedup` from the two timings (or from why the learner's program could not
 * be timed). Pure, so the verdict and its wording are unit-tested.
 */
export function judgeThroughput(minSpeedup: number, baseline: BurstTiming, learner: BurstTiming | { problem: string }): CheckResult {
  const baseRate = burstRate(baseline);
  const needed = baseRate * minSpeedup;
  const evidence = [
    baseline.processed >= baseline.records
      ? `baseline program: ${baseline.records} records in ${seconds(baseline.ms)} = ${rateText(baseRate)} records/s`
      : `baseline program: ${baseline.processed} of ${baseline.records} records in ${seconds(baseline.ms)} = ${rateText(baseRate)} records/s (timed over part of the burst: it is slow and steady)`,
  ];
  const requirement = `at least ${minSpeedup}x the baseline required, i.e. ${rateText(needed)} records/s: all ${baseline.records} records within ${seconds(allowedMs(baseline, minSpeedup))}`;
  const how = `each timed from the commit of a burst of ${baseline.records} records (one transaction, no faults, topics of its own) until the group's committed offsets covered them`;
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
  const complete = learner.processed >= learner.records;
  const passed = complete && rate >= needed;
  evidence.push(
    complete
      ? `your program: ${learner.records} records in ${seconds(learner.ms)} = ${rateText(rate)} records/s`
      : `your program: ${learner.processed} of ${learner.records} records in ${seconds(learner.ms)} = ${rateText(rate)} records/s (the grader stopped waiting: the rest could no longer have made it in time)`,
    `speed-up: ${times(ratio)} (${rateText(rate)} / ${rateText(baseRate)} records/s); ${requirement}`,
    how,
  );
  return {
    name: 'throughput-speedup',
    passed,
    summary: passed
      ? `${times(ratio)} the baseline's throughput (${rateText(rate)} vs ${rateText(baseRate)} records/s), at least ${minSpeedup}x required`
      : `only ${times(ratio)} the baseline's throughput (${rateText(rate)} vs ${rateText(baseRate)} records/s), at least ${minSpeedup}x required`,
    evidence,
  };
}

/** Warm-up and burst transactions for one program: a few records per input partition, then N. */
export function planBurst(lab: LabDefinition, records: number): { warmup: SeedTransaction; burst: SeedTransaction } {
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
  lab: LoadedLab;
  kafka: Kafka;
  brokers: string[];
  /** The attempt's namespace; the two measurement namespaces derive from it. */
  namespace: string;
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
 * The baseline is slow by design and steady (the same work per record), so on a busy machine its
 * rate is taken from the part of the burst it finished within this window; the rate of a part is
 * as good as the rate of the whole there, and a grade never waits half a minute for it.
 */
const BASELINE_WINDOW_MS = 5_000;
/** ...but never from fewer records than this (unless the limit below is reached). */
const BASELINE_MIN_RECORDS = 10;
const BASELINE_BURST_LIMIT_MS = 60_000;
/** A learner's burst is watched at least this long, so a slow program's rate is measured, not guessed. */
const MIN_LEARNER_WAIT_MS = 2_000;
/** ...and at most this long, even when a crawling baseline would allow more. */
const LEARNER_LIMIT_MS = 15_000;
const POLL_MS = 10;
const MAX_RESTARTS = 3;

/** One measured program: its process (restarted a few times if it exits), input writer and group. */
class Lane {
  readonly groupId: string;
  readonly writer: InputWriter;
  instance: ProgramInstance | null = null;
  restarts = 0;
  lastError = '';
  private stopped = false;

  constructor(
    readonly name: string,
    readonly namespace: string,
    private readonly ctx: ThroughputContext,
    private readonly source: ProgramSource,
    private readonly showOutput: boolean,
  ) {
    this.groupId = `${namespace}-group`;
    this.writer = new InputWriter(ctx.kafka, `${namespace}-seeder`, (t) => this.topic(t));
  }

  topic(logical: string): string {
    return `${this.namespace}-${logical}`;
  }

  start(): void {
    const instance = new ProgramInstance(this.name, this.restarts + 1, this.source, this.ctx.env(this.namespace));
    this.instance = instance;
    instance.on('line', (stream, line) => {
      if (stream === 'stderr' && line.trim()) this.lastError = line.trim();
      if (this.showOutput) this.ctx.output(this.name, stream, line);
    });
    instance.on('exit', (code, signal) => {
      if (this.stopped || this.instance !== instance) return;
      if (this.restarts >= MAX_RESTARTS) return;
      this.restarts++;
      if (this.showOutput) this.ctx.system(`${this.name} exited (${signal ?? `code ${code}`}) during the throughput measurement; restarting it.`);
      setTimeout(() => !this.stopped && this.start(), 250).unref();
    });
  }

  get alive(): boolean {
    return !!this.instance?.alive || (!this.stopped && this.restarts < MAX_RESTARTS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    // SIGKILL: the lane's topics, group and transactional ids are thrown away, nothing to tidy.
    await this.instance?.kill();
  }

  /** How many of `records` (indices) the group's committed offsets cover. */
  async covered(admin: Admin, records: ReadonlySet<number>): Promise<number> {
    const inputs = [...new Set(this.writer.written.filter((r) => records.has(r.index)).map((r) => r.topic))];
    const committed = new Map<string, number>();
    for (const topic of inputs) {
      const [offsets] = await admin.fetchOffsets({ groupId: this.groupId, topics: [this.topic(topic)] });
      for (const p of offsets?.partitions ?? []) committed.set(`${topic}/${p.partition}`, Number(p.offset));
    }
    return this.writer.written.filter((r) => records.has(r.index) && r.offset < (committed.get(`${r.topic}/${r.partition}`) ?? -1)).length;
  }
}

/**
 * Waits for the warm-up: until the lane's group covers all `records`, or `until` (epoch ms), or
 * the lane gave up. A program that commits some of them and then stalls (offsets committed for
 * one partition only, say) is up and running all the same: it gets a moment, then its timing.
 */
async function waitWarm(admin: Admin, lane: Lane, records: ReadonlySet<number>, until: number): Promise<{ processed: number }> {
  let someSince = 0;
  for (;;) {
    const processed = await lane.covered(admin, records).catch(() => 0);
    if (processed > 0) someSince ||= Date.now();
    if (processed >= records.size || Date.now() >= until || !lane.alive || (someSince && Date.now() - someSince > PARTIAL_WARMUP_MS)) return { processed };
    await sleep(POLL_MS);
  }
}

/** Writes the burst, returning the moment its transaction committed (performance.now()). */
async function writeBurst(lane: Lane, burst: SeedTransaction): Promise<number> {
  await lane.writer.write([burst]);
  return performance.now();
}

/**
 * Times the baseline and then the learner's program, and decides `throughput-speedup`.
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
  return brokerMaintenance.withShared(async () => {
    try {
      await admin.connect();
      await retry(
        () =>
          admin.createTopics({
            waitForLeaders: true,
            topics: lanes.flatMap((lane) => def.topics.map((t) => ({ topic: lane.topic(t.name), numPartitions: t.partitions }))),
          }),
        { retries: 6, minDelayMs: 250, maxDelayMs: 2_000, shouldRetry: (err) => !/already exists/i.test(describeError(err)) },
      );
      await Promise.all(lanes.map((lane) => lane.writer.connect()));
      // Both start together (a Node start and a group join each) and warm up side by side.
      for (const lane of lanes) lane.start();
      await Promise.all(lanes.map((lane) => lane.writer.write([warmup])));
      const warmed = await Promise.all(lanes.map((lane) => waitWarm(admin, lane, warmupIds, Date.now() + WARMUP_LIMIT_MS)));
      if (warmed[0]!.processed < warmupIds.size) {
        // The baseline is known to commit every offset: short of that, the grader is in trouble.
        throw new KafkaIqError('INTERNAL', `the baseline program did not process its warm-up records within ${WARMUP_LIMIT_MS / 1000} s${baseline.lastError ? ` (${baseline.lastError})` : ''}`);
      }

      // Both bursts are committed at the same moment and timed side by side: the load of a busy
      // machine comes and goes within seconds, and running together both programs see the same.
      const learnerReady = warmed[1]!.processed > 0;
      const [baseStart, learnerStart] = await Promise.all([writeBurst(baseline, burst), learnerReady ? writeBurst(learner, burst) : 0]);
      const hardLimit = Date.now() + BASELINE_BURST_LIMIT_MS;
      let baseTiming: BurstTiming | null = null;
      let learnerTiming: BurstTiming | null = learnerReady ? null : { records: total, processed: 0, ms: 0 };
      while (!baseTiming || !learnerTiming) {
        if (!baseTiming) {
          const processed = await baseline.covered(admin, burstIds).catch(() => 0);
          const ms = performance.now() - baseStart;
          if (processed >= total || (ms >= BASELINE_WINDOW_MS && processed >= BASELINE_MIN_RECORDS)) {
            baseTiming = { records: total, processed, ms };
            await baseline.stop(); // its share of the machine goes to the learner's program now
          } else if (Date.now() > hardLimit || !baseline.alive) {
            throw new KafkaIqError('INTERNAL', `the baseline program processed only ${processed} of ${total} burst records in ${(ms / 1000).toFixed(1)} s${baseline.lastError ? ` (${baseline.lastError})` : ''}`);
          }
        }
        if (!learnerTiming) {
          const processed = await learner.covered(admin, burstIds).catch(() => 0);
          const ms = performance.now() - learnerStart;
          // Once the baseline's rate is known, the learner's deadline is known: past it, the
          // program cannot pass any more, and what it did so far gives its rate.
          const limit = baseTiming ? Math.max(MIN_LEARNER_WAIT_MS, Math.min(allowedMs(baseTiming, spec.minSpeedup), LEARNER_LIMIT_MS)) : Infinity;
          if (processed >= total || ms >= limit || !learner.alive || Date.now() > hardLimit) learnerTiming = { records: total, processed, ms };
        }
        await sleep(POLL_MS);
      }
      let check: CheckResult;
      if (!learnerReady) {
        const why = !learner.alive
          ? `it kept exiting before it had processed the first records${learner.lastError ? ` (last error: ${learner.lastError})` : ''}`
          : `it committed no offsets for its first ${warmupIds.size} records within ${WARMUP_LIMIT_MS / 1000} s (does it subscribe with fromBeginning: true, and commit the offsets?)`;
        check = judgeThroughput(spec.minSpeedup, baseTiming, { problem: why });
      } else {
        check = judgeThroughput(spec.minSpeedup, baseTiming, learnerTiming);
      }
      ctx.system(`Throughput: ${check.summary} (measured in ${((Date.now() - began) / 1000).toFixed(1)} s).`);
      return { check, baseline: baseTiming, learner: learnerReady ? learnerTiming : null };
    } finally {
      await Promise.all(lanes.map((lane) => lane.stop()));
      await Promise.all(lanes.map((lane) => lane.writer.disconnect()));
      await admin
        .deleteTopics({ topics: lanes.flatMap((lane) => def.topics.map((t) => lane.topic(t.name))), timeout: 5_000 })
        .catch(() => {});
      await admin.disconnect().catch(() => {});
    }
  });
}
