/**
 * How far a pipeline program got: the committed inputs its group's offsets (or its database rows)
 * cover, and for multi-stage labs whether the later stages caught up. Polled every 300 ms for the
 * progress bar, the settle phase and the waits between faults; and at once when the program commits
 * while the grade waits on its progress, so that the grade goes on as soon as the offsets show it.
 */
import { bestEffort } from '../../core/best-effort.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Admin, Kafka } from 'kafkajs';
import type { PipelineLab } from '../../../src/shared/lab.ts';
import { OffsetsProbe, type PartitionEnds } from '../../kafka/inspect.ts';
import type { AttemptDatabase } from '../database-attempt.ts';
import type { SeededRecord } from '../seeder.ts';

/** Multi-stage labs: how long the later stages' topics must stay unchanged before verifying. */
const PIPELINE_QUIET_MS = 1_000;
/**
 * A stage fed from the database (an outbox relay) shows its position nowhere in Kafka: its
 * output staying quiet is the only sign it is done. On a loaded machine a relay's poll, query and
 * transaction take longer than PIPELINE_QUIET_MS, and one restarted after the output last moved
 * has not published anything yet: quiet must last longer.
 */
const DATABASE_FED_QUIET_MS = 3_000;
const DATABASE_FED_RESTARTED_QUIET_MS = 6_000;
/**
 * Between faults: a program that worked on the new input and then went quiet (no offsets, no
 * output, no open transaction) for this long is done with it, even if its group's offsets do not
 * say so (it commits the wrong offset, or to another group). offsets-consistent reports that.
 */
const IDLE_AFTER_WORK_MS = 3_000;
/**
 * The least time between the end of one poll and a poll a commit asks for. A program committing
 * in a tight loop (empty transactions, say) must not drive the grader's requests, which none of the
 * attempt's quotas bound, faster than this.
 */
const COMMIT_POLL_GAP_MS = 100;

export interface ProgressSource {
  kafka: Kafka;
  brokers: string[];
  lab: PipelineLab;
  groupId: string;
  realTopic(logical: string): string;
  /** Every input record written so far. */
  written(): readonly SeededRecord[];
  database(): AttemptDatabase | null;
  /** Whether the later stages are polled too (a grade that is running or settling). */
  watchStages(): boolean;
  /** The figure moved: a crash loop is broken. */
  moved(): void;
  /** Whether a live instance says it holds a transaction open (our wrapper; false for --cmd). */
  transactionOpen(): boolean;
  /**
   * Whether every live instance has read its database since it started, as the relay saw (a
   * Query or Execute); true when that cannot be seen (a --cmd program, no sandbox).
   */
  readFromDatabaseSinceStart(): boolean;
}

export class PipelineProgress {
  /** Committed inputs accounted for, as of the last poll. */
  processed = 0;
  /** When the program last showed progress (or was started). */
  lastActivityAt = Date.now();
  /**
   * When `processed` last moved: offsets (or database rows) committed. Unlike output, which an
   * abort moves as much as a commit (records, then an abort marker), this is progress for sure.
   */
  processedMovedAt = 0;
  /** When the output topics' ends last moved (or an output transaction opened or closed). */
  outputMovedAt = 0;
  /** Whether an output partition has an open transaction (LSO < HWM), as of the last poll. */
  outputOpen = false;
  /**
   * When the output partitions' LSOs last moved. A transaction a stopped instance left open pins
   * its LSO until the coordinator aborts it; a live program writing and aborting again and again
   * moves the LSO on every abort.
   */
  lsoMovedAt = 0;
  private lsoSignature = '';
  /** When an instance last started (a restarted program has not worked on anything yet). */
  lastStartAt = 0;
  private outputSignature = '';
  private polling = false;
  private polls = 0;
  /** A commit came while a poll was under way (it may have read the offsets before it): poll again. */
  private pollAgain = false;
  private lastPollEndedAt = 0;
  private commitPollTimer: NodeJS.Timeout | null = null;
  /** Waits on the next poll (waitFor, settling): while any runs, a commit is polled at once. */
  private readonly waiters = new Set<() => void>();
  private admin: Admin | null = null;
  private probeOf: OffsetsProbe | null = null;
  private readonly stages = { signature: '', changedAt: Date.now(), caughtUp: false, polls: 0 };

  constructor(private readonly src: ProgressSource) {}

  /** The attempt's offsets probe (also for "is a transaction open" of opaque programs). */
  get probe(): OffsetsProbe {
    return (this.probeOf ??= new OffsetsProbe(this.src.brokers));
  }

  // `processed` counts the input group's offsets: the first stage only. With internal topics the
  // later stages may still be working when it is complete, so settling also waits for them.
  get staged(): boolean {
    const { topics, database } = this.src.lab;
    // A database lab with an output topic (the outbox relay) is a later stage too: the rows show
    // progress first, the events follow. Settling waits for the output to be quiet and committed.
    return topics.some((t) => t.role === 'internal') || (!!database && topics.some((t) => t.role === 'output'));
  }

  get stagesCaughtUp(): boolean {
    return this.stages.caughtUp;
  }

  /**
   * `processed` as of now: waits for a poll that began after this call. A poll already in flight
   * may predate a commit the program has just made, and reading it would later make that commit
   * look like someone else's progress (a zombie's last commit taken for its replacement's first).
   */
  async fresh(timeoutMs = 5_000): Promise<number> {
    const target = this.polls + 2;
    const until = Date.now() + timeoutMs;
    while (this.polls < target && Date.now() < until) await sleep(50);
    return this.processed;
  }

  /**
   * The program committed (offsets, or its database transaction). While the grade waits on its
   * progress, poll now rather than at the next tick: a fault's wait for its wave, and settling, end
   * up to a tick sooner each. Nobody waiting, the tick will do: each poll is requests to a broker
   * other attempts share.
   */
  committed(): void {
    if (this.waiters.size === 0) return;
    if (this.polling) this.pollAgain = true;
    else this.pollForCommit();
  }

  /** A poll for a commit: now, or once COMMIT_POLL_GAP_MS has passed since the last one ended. */
  private pollForCommit(): void {
    if (this.commitPollTimer) return;
    const wait = this.lastPollEndedAt + COMMIT_POLL_GAP_MS - Date.now();
    if (wait <= 0) {
      void this.poll();
      return;
    }
    this.commitPollTimer = setTimeout(() => {
      this.commitPollTimer = null;
      void this.poll();
    }, wait);
  }

  /** Resolves when the next poll ends, or after `maxMs`; meanwhile a commit is polled at once. */
  nextPoll(maxMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, maxMs);
      this.waiters.add(done);
    });
  }

  async poll(): Promise<void> {
    if (this.polling) return; // the previous poll is still waiting on the broker
    this.polling = true;
    this.pollAgain = false;
    try {
      const written = this.src.written();
      let processed = 0;
      for (const topic of this.src.lab.topics.filter((t) => t.role === 'input')) {
        // One try: a poll the broker does not answer keeps the last figure (the next one asks again).
        for (const p of await this.probe.committedOffsets(this.src.groupId, this.src.realTopic(topic.name), { retries: 0 })) {
          const committedOffset = p.offset;
          processed += written.filter((r) => r.committed && r.topic === topic.name && r.partition === p.partition && r.offset < committedOffset).length;
        }
      }
      // A database lab's program may keep its offsets in the database: its rows count too.
      const database = this.src.database();
      if (database) {
        const committed = written.filter((r) => r.committed);
        // A database that does not answer this poll adds nothing to it; the next poll asks again.
        processed = Math.max(processed, await database.appliedCount(committed).catch(() => 0));
      }
      if (processed !== this.processed) {
        this.lastActivityAt = this.processedMovedAt = Date.now();
        this.src.moved();
      }
      this.processed = processed;
      await this.pollOutputs();
      if (this.staged && this.src.watchStages()) await this.pollStages();
    } catch {
      // The broker may be restarting (a fault): keep the last figure, and connect afresh next time.
      const broken = this.admin;
      this.admin = null;
      await bestEffort('disconnect the progress admin after a failed poll', async () => broken?.disconnect());
    } finally {
      this.polling = false;
      this.polls++;
      this.lastPollEndedAt = Date.now();
      const again = this.pollAgain && this.waiters.size > 0;
      for (const wake of [...this.waiters]) wake();
      if (again) this.pollForCommit();
    }
  }

  /**
   * What the program wrote, whatever its offsets say: the output topics' ends and whether a
   * transaction is open on them. Output that moves is activity (settling does not give up on a
   * program that is still writing), and the between-fault wait can tell a program that finished
   * its input from one that never started it.
   */
  private async pollOutputs(): Promise<void> {
    const outputs = this.src.lab.topics.filter((t) => t.role === 'output');
    if (!outputs.length) return; // a database sink: its rows count in `processed`
    const ends = await Promise.all(outputs.map((t) => this.probe.ends(this.src.realTopic(t.name))));
    const signature = JSON.stringify(ends.map((offsets) => offsets.map((p) => [p.lso, p.hwm])));
    this.outputOpen = ends.some((offsets) => offsets.some((p) => p.lso < p.hwm));
    const lsos = JSON.stringify(ends.map((offsets) => offsets.map((p) => p.lso)));
    if (lsos !== this.lsoSignature) {
      this.lsoSignature = lsos;
      this.lsoMovedAt = Date.now();
    }
    if (signature === this.outputSignature) return;
    const first = this.outputSignature === '';
    this.outputSignature = signature;
    if (first && ends.every((offsets) => offsets.every((p) => p.hwm === 0))) return; // empty topics: nothing written yet
    this.outputMovedAt = Date.now();
    this.lastActivityAt = Date.now();
  }

  /** An instance (re)started: activity, and nothing it wrote yet. */
  started(): void {
    this.lastStartAt = this.lastActivityAt = Date.now();
  }

  /** Whether the program wrote any output yet (or, without output topics, processed anything). */
  get outputSeen(): boolean {
    return this.outputMovedAt > 0 || this.processed > 0;
  }

  /**
   * Reads the ends of the internal and output topics, and the offsets every consumer group of this
   * attempt (named after GROUP_ID) committed on the internal topics. Caught up: no transaction is
   * open, and on every internal topic some group consumes, the furthest committed offset of each
   * partition with data is at its end (end - 1: the last entry of a transactional write is its
   * commit marker, which no consumer commits past).
   */
  private async pollStages(): Promise<void> {
    // One admin client for the whole attempt (listGroups): a fresh one every 300 ms cost a
    // connection, an ApiVersions and a metadata round trip per poll, on a broker CI shares.
    const admin = (this.admin ??= this.src.kafka.admin());
    await admin.connect();
    const topics = this.src.lab.topics.filter((t) => t.role !== 'input');
    const ends = new Map<string, PartitionEnds[]>();
    let caughtUp = true;
    for (const topic of topics) {
      const offsets = await this.probe.ends(this.src.realTopic(topic.name));
      ends.set(topic.name, offsets);
      if (offsets.some((p) => p.lso < p.hwm)) caughtUp = false;
    }
    const signature = JSON.stringify([...ends].map(([name, offsets]) => [name, offsets.map((p) => p.hwm)]));
    if (signature !== this.stages.signature) {
      this.stages.signature = signature;
      this.stages.changedAt = Date.now();
      this.lastActivityAt = Date.now();
    }
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(this.src.groupId));
    for (const topic of topics.filter((t) => t.role === 'internal')) {
      const furthest = new Map<number, number>();
      for (const groupId of groups) {
        for (const p of await this.probe.committedOffsets(groupId, this.src.realTopic(topic.name))) {
          if (p.offset >= 0) furthest.set(p.partition, Math.max(furthest.get(p.partition) ?? -1, p.offset));
        }
      }
      if (furthest.size === 0) continue; // no stage reads it through a group (a changelog, say)
      for (const p of ends.get(topic.name)!) if (p.hwm > 0 && (furthest.get(p.partition) ?? -1) < p.hwm - 1) caughtUp = false;
    }
    this.stages.caughtUp = caughtUp;
    this.stages.polls++;
  }

  /** True when every stage after the first has finished too (always true without internal topics). */
  settled(): boolean {
    if (!this.staged) return true;
    const { topics } = this.src.lab;
    const databaseFed = !topics.some((t) => t.role === 'internal');
    const quietFor = !databaseFed ? PIPELINE_QUIET_MS : this.lastStartAt > this.outputMovedAt ? DATABASE_FED_RESTARTED_QUIET_MS : DATABASE_FED_QUIET_MS;
    // A database-fed stage restarted after its output last moved shows nothing in Kafka until it
    // publishes: quiet proves nothing before it has read its database at least once.
    if (databaseFed && !this.src.readFromDatabaseSinceStart()) return false;
    return this.stages.caughtUp && Date.now() - this.stages.changedAt >= quietFor;
  }

  /**
   * Waits until `target` inputs are processed, the program idles after work, `stuck()` says so, or
   * the time is up. After a fault: the next fault is then armed while the program is idle, and its
   * crash-point count starts at a batch boundary.
   */
  async waitFor(target: number, timeoutMs: number, stuck: () => boolean = () => false): Promise<void> {
    const until = Date.now() + Math.max(0, timeoutMs);
    // Wrote output since its latest (re)start, no transaction open, and nothing moved since.
    const idleAfterWork = () =>
      this.outputMovedAt > this.lastStartAt && !this.outputOpen && !this.src.transactionOpen() && Date.now() - Math.max(this.outputMovedAt, this.lastActivityAt) >= IDLE_AFTER_WORK_MS;
    while (Date.now() < until && this.processed < target && !idleAfterWork() && !stuck()) await this.nextPoll(100);
    // Multi-stage: the later stages too (a retried batch of the last stage, say), so the next
    // fault does not cut short what the previous one set up. Judged by a poll that started after
    // the first stage was done; a pipeline that never catches up costs at most 5 s here.
    if (!this.staged || this.processed < target) return;
    const after = this.stages.polls + 1;
    const stagesUntil = Math.min(until, Date.now() + 5_000);
    while (Date.now() < stagesUntil && !(this.stages.polls > after && this.stages.caughtUp)) await sleep(100);
  }

  async close(): Promise<void> {
    if (this.commitPollTimer) clearTimeout(this.commitPollTimer);
    this.commitPollTimer = null;
    await bestEffort('disconnect the progress admin', async () => this.admin?.disconnect());
    this.admin = null;
    await this.probeOf?.close();
  }
}
