import { createHash } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { ConsumedRecord, InspectCommand, InspectResult } from '../../src/shared/messages.ts';
import type { GradeReport } from '../../src/shared/report.ts';
import { fixedClusters, type ClusterHandle, type ClusterKind, type ClusterSource } from '../broker/cluster-pool.ts';
import type { KafkaCluster } from '../broker/cluster.ts';
import { KafkaIqError } from '../../src/shared/errors.ts';
import { createKafka, withAdmin } from '../kafka/client.ts';
import { partitionOffsets, readTopic } from '../kafka/inspect.ts';
import { fetchCommittedOffsets } from '../kafka/group-offsets.ts';
import { randomNamespace } from '../kafka/attempt-names.ts';
import { listTransactions } from '../kafka/transactions.ts';
import { loadLab } from '../labs/load-lab.ts';
import type { LabSessionApi, ManualFault, SessionListener } from './contract.ts';
import { createAttempt } from './attempt.ts';
import type { Attempt, AttemptMode } from './types.ts';

const MAX_CONSUMED = 500;
/** Longest key or value shown by `consume`: a program's 1 MB record must not become a 500 MB answer. */
const MAX_SHOWN_CHARS = 2_000;
const shown = (text: string | null) => (text && text.length > MAX_SHOWN_CHARS ? `${text.slice(0, MAX_SHOWN_CHARS)} … [${text.length} characters]` : text);

export interface LabSessionOptions {
  sessionId: string;
  listener: SessionListener;
  /** The cluster of labs that declare `cluster: 'single'` (and of every lab without `clusters`). */
  cluster: Pick<KafkaCluster, 'brokers' | 'control'>;
  /** Where labs that declare another cluster (the 3-node failover labs) get theirs, on first use. */
  clusters?: ClusterSource;
}

/**
 * One learner's workbench: at most one run or grade at a time, in a namespace of their own. The
 * latest attempt's topics are kept, so `consume` and `offsets` can look at what just happened.
 */
export class LabSession implements LabSessionApi {
  private readonly kafka: Kafka;
  private readonly kafkaClientId: string;
  private attempts = 0;
  /** The cluster of the latest attempt: inspection commands look there. */
  private latestCluster: { brokers: string[]; kafka: Kafka } | null = null;
  /** True while begin() waits for a cluster (the 3-node one may take a while to start). */
  private beginning = false;
  private current: { attempt: Attempt; done: Promise<unknown>; mode: AttemptMode } | null = null;
  private latest: Attempt | null = null;

  constructor(private readonly options: LabSessionOptions) {
    // The client id only labels the session's grader connections in broker logs; no Kafka name
    // derives from the learner-chosen session id (each attempt's namespace is random, below).
    const digest = createHash('sha256').update(options.sessionId).digest('hex').slice(0, 8);
    this.kafkaClientId = `kafkaiq-session-${digest}`;
    this.kafka = createKafka(options.cluster.brokers, this.kafkaClientId);
  }

  private async begin(labId: string, code: string, mode: AttemptMode, seed?: number): Promise<Attempt> {
    if (this.current) {
      throw new KafkaIqError('BUSY', `A ${this.current.mode === 'run' ? 'run' : 'grade'} is still going: stop it first (Stop button or 'stop').`);
    }
    if (this.beginning) throw new KafkaIqError('BUSY', 'The previous run or grade is still starting: wait a moment.');
    let cluster: ClusterHandle;
    let lab;
    this.beginning = true;
    try {
      lab = await loadLab(labId);
      cluster = await this.clusterFor(lab.definition.cluster);
    } finally {
      this.beginning = false;
    }
    const previous = this.latest;
    this.attempts++;
    const attempt = createAttempt({
      lab,
      program: { kind: 'code', code },
      brokers: cluster.brokers,
      control: cluster.control,
      // 128 random bits per attempt: nothing the client sent, and never an earlier attempt's.
      namespace: randomNamespace(),
      mode,
      seed,
      listener: this.options.listener,
    });
    this.latest = attempt;
    this.latestCluster =
      cluster.brokers.join(',') === this.options.cluster.brokers.join(',') ? null : { brokers: cluster.brokers, kafka: createKafka(cluster.brokers, this.kafkaClientId) };
    void previous?.deleteTopics();
    return attempt;
  }

  private async clusterFor(kind: ClusterKind): Promise<ClusterHandle> {
    if (kind === 'single') return this.options.cluster;
    const source = this.options.clusters ?? fixedClusters(this.options.cluster);
    if (source.isReady && !source.isReady(kind)) {
      this.options.listener.output('grader', 'system', 'This lab runs on a 3-broker cluster: connecting to it, or starting it (about 20 s, once per server)...');
    }
    return source.get(kind);
  }

  /** Brokers and client of the latest attempt's cluster. */
  private get brokers(): string[] {
    return this.latestCluster?.brokers ?? this.options.cluster.brokers;
  }

  private get client(): Kafka {
    return this.latestCluster?.kafka ?? this.kafka;
  }

  async run(labId: string, code: string): Promise<void> {
    const attempt = await this.begin(labId, code, 'run');
    const done = attempt.run();
    this.current = { attempt, done, mode: 'run' };
    try {
      await done;
    } finally {
      this.current = null;
    }
  }

  async grade(labId: string, code: string, options: { quick: boolean; seed?: number }): Promise<GradeReport> {
    const mode = options.quick ? 'quick' : 'grade';
    const attempt = await this.begin(labId, code, mode, options.seed);
    const done = attempt.grade();
    this.current = { attempt, done, mode };
    try {
      return await done;
    } finally {
      this.current = null;
    }
  }

  async stop(): Promise<void> {
    const current = this.current;
    if (!current) return;
    current.attempt.requestStop();
    await current.done.catch(() => {}); // the grade's own caller gets its result or error
  }

  async fault(kind: ManualFault, instance?: string): Promise<void> {
    if (!this.current || this.current.mode !== 'run') {
      throw new KafkaIqError('INVALID_INPUT', 'Faults can be injected into a Run only: press Run first (a Grade brings its own fault plan).');
    }
    await this.current.attempt.manualFault(kind, instance);
  }

  /** Resolves a name the learner typed: an env name (OUTPUT_TOPIC), a logical name (output) or a real topic. */
  private resolveTopic(name: string): string {
    const attempt = this.latest;
    if (!attempt) throw new KafkaIqError('INVALID_INPUT', 'Nothing has run yet: press Run or Grade first, then inspect its topics.');
    const env = attempt.topicEnv();
    const real = env[name] ?? Object.values(env).find((t) => t === name || t.endsWith(`-${name}`));
    if (!real) throw new KafkaIqError('INVALID_INPUT', `Unknown topic "${name}": try one of ${Object.keys(env).join(', ')} (or run 'topics').`);
    return real;
  }

  async inspect(command: InspectCommand): Promise<InspectResult> {
    const brokers = this.brokers;
    switch (command.what) {
      case 'topics': {
        const attempt = this.latest;
        if (!attempt) return { what: 'topics', topics: [] };
        const env = attempt.topicEnv();
        const metadata = await withAdmin(this.client, (admin) => admin.fetchTopicMetadata({ topics: Object.values(env) }));
        return {
          what: 'topics',
          topics: metadata.topics.map((t) => ({ name: t.name, env: Object.keys(env).find((k) => env[k] === t.name) ?? null, partitions: t.partitions.length })),
        };
      }
      case 'consume': {
        const topic = this.resolveTopic(command.topic);
        return { what: 'consume', topic, isolation: command.isolation, ...(await this.consume(topic, command)) };
      }
      case 'offsets': {
        const topic = this.resolveTopic(command.topic);
        const groupId = this.latest!.groupId;
        const [offsets, group] = await Promise.all([partitionOffsets(brokers, topic), withAdmin(this.client, (admin) => fetchCommittedOffsets(admin, groupId, topic))]);
        return {
          what: 'offsets',
          topic,
          partitions: offsets.map((p) => {
            const committed = group.find((g) => g.partition === p.partition)?.offset ?? -1;
            return { ...p, committed: committed >= 0 ? committed : null, blockedLag: p.hwm - p.lso };
          }),
        };
      }
      case 'txns':
        return { what: 'txns', transactions: this.latest ? await listTransactions(brokers, this.latest.namespace) : [] };
      case 'sql': {
        const database = (this.current?.attempt ?? this.latest)?.database() ?? null;
        if (!database) {
          throw new KafkaIqError(
            'INVALID_INPUT',
            "No database to query: `sql` reads the database of a lab that writes to one, while its Run (or grade) goes on; the database is given back when it ends.",
          );
        }
        return { what: 'sql', ...(await database.readOnlyQuery(command.query)) };
      }
    }
  }

  /**
   * Shows a topic the way each isolation level sees it, plus what it hides: records of aborted
   * transactions, records of still-open ones, and the offsets taken by commit/abort markers.
   */
  private async consume(
    topic: string,
    window: { isolation: 'read_committed' | 'read_uncommitted'; from?: number; limit: number; partition?: number },
  ): Promise<{
    records: ConsumedRecord[];
    truncated: boolean;
    omitted: { partition: number; before: number; after: number }[];
    totals: { committed: number; aborted: number; open: number; markers: number };
  }> {
    const { isolation } = window;
    const brokers = this.brokers;
    const offsets = (await partitionOffsets(brokers, topic)).filter((p) => window.partition === undefined || p.partition === window.partition);
    if (window.partition !== undefined && offsets.length === 0) throw new KafkaIqError('INVALID_INPUT', `${topic} has no partition ${window.partition}.`);
    const committed = await readTopic(this.client, brokers, topic, { isolation: 'read_committed', timeoutMs: 5_000 });
    const uncommitted = await readTopic(this.client, brokers, topic, { isolation: 'read_uncommitted', timeoutMs: 5_000 });
    const committedAt = new Set(committed.records.map((r) => `${r.partition}/${r.offset}`));
    const records: ConsumedRecord[] = [];
    const omitted: { partition: number; before: number; after: number }[] = [];
    // The tally covers the whole of each partition read, so a window still tells how much was aborted.
    const totals = { committed: 0, aborted: 0, open: 0, markers: 0 };
    for (const p of offsets) {
      const data = uncommitted.records.filter((r) => r.partition === p.partition);
      const byOffset = new Map(data.map((r) => [r.offset, r]));
      // Every entry of the partition as this isolation level lists it, then the window of it.
      const entries: ConsumedRecord[] = [];
      for (let offset = p.logStart; offset < p.hwm; offset++) {
        const r = byOffset.get(offset);
        const status: ConsumedRecord['status'] = !r ? 'marker' : committedAt.has(`${p.partition}/${offset}`) ? 'committed' : offset >= p.lso ? 'open' : 'aborted';
        if (isolation === 'read_committed' && (status === 'aborted' || status === 'open')) continue;
        totals[status === 'marker' ? 'markers' : status]++;
        entries.push({ partition: p.partition, offset, key: r?.key ?? null, value: r?.value ?? null, status });
      }
      const start = window.from === undefined ? Math.max(0, entries.length - window.limit) : entries.findIndex((e) => e.offset >= window.from!);
      const first = start < 0 ? entries.length : start;
      const shownEntries = entries.slice(first, first + window.limit);
      if (first > 0 || first + shownEntries.length < entries.length) omitted.push({ partition: p.partition, before: first, after: entries.length - first - shownEntries.length });
      for (const e of shownEntries) records.push({ ...e, key: shown(e.key), value: shown(e.value) });
    }
    return { records: records.slice(0, MAX_CONSUMED), truncated: records.length > MAX_CONSUMED, omitted, totals };
  }

  async dispose(): Promise<void> {
    await this.stop();
    await this.latest?.deleteTopics();
  }
}

export function createLabSession(options: LabSessionOptions): LabSessionApi {
  return new LabSession(options);
}
