import type { Kafka, RecordMetadata, Transaction } from 'kafkajs';
import { describeError, KafkaIqError } from '../../src/shared/errors.ts';
import { bestEffort } from '../core/best-effort.ts';
import { retry } from '../core/retry.ts';
import { isRetriableKafkaError } from '../kafka/group-offsets.ts';
import type { PipelineLab, SeedRecord } from '../../src/shared/lab.ts';
import { seededRandom } from './fault-plan.ts';

function groupByTopic(records: SeedRecord[]): Map<string, SeedRecord[]> {
  const byTopic = new Map<string, SeedRecord[]>();
  for (const r of records) byTopic.set(r.topic, [...(byTopic.get(r.topic) ?? []), r]);
  return byTopic;
}

export interface SeededRecord extends SeedRecord {
  committed: boolean;
  /** Offset in the real topic, known once written. */
  offset: number;
}

export interface SeedTransaction {
  records: SeedRecord[];
  commit: boolean;
  /** Held open this long (by a producer of its own) before it commits or aborts. */
  holdMs?: number;
}

const WORDS = ['amber', 'basil', 'cedar', 'delta', 'ember', 'fjord', 'grove', 'harbor', 'island', 'juniper', 'kelp', 'lagoon'];

/**
 * The default value of record `index`. With a grade's seed, its words and a token come from the
 * seed, so no program can ship the expected output precomputed; without one (a Run, the unit
 * tests), the classic fixed values.
 */
function valueMaker(seed: number | undefined): (index: number, key: string) => string {
  if (seed === undefined) return (index, key) => `rec-${String(index).padStart(5, '0')} ${key} ${WORDS[index % WORDS.length]} ${WORDS[(index * 7 + 3) % WORDS.length]}`;
  const random = seededRandom(seed ^ 0x5eed);
  const pick = () => WORDS[Math.floor(random() * WORDS.length)]!;
  return (index, key) => `rec-${String(index).padStart(5, '0')} ${key} ${pick()} ${pick()} ${Math.floor(random() * 0xffffff).toString(16).padStart(6, '0')}`;
}

/**
 * The input of a lab run, decided before anything is written: which records, which partition
 * (a key always maps to the same partition) and which seeding transactions are aborted. A grade
 * passes its seed: the default values and which transactions abort (the same share, 1 in
 * abortEvery, at a seeded phase) then differ from grade to grade, reproducibly per seed.
 */
export function planSeedTransactions(lab: PipelineLab, seed?: number): SeedTransaction[] {
  const transactions: SeedTransaction[] = [];
  const defaultValue = valueMaker(seed);
  const phaseRandom = seed === undefined ? null : seededRandom(seed ^ 0xab0e7);
  const phases = lab.seeds.map((s) => (phaseRandom ? Math.floor(phaseRandom() * s.abortEvery) : 0));
  let index = 0;
  // Interleave the seeds (fan-in labs have two inputs) one transaction at a time.
  const cursors = lab.seeds.map((seed, i) => ({ seed, written: 0, txn: 0, phase: phases[i]!, heldOne: false }));
  while (cursors.some((c) => c.written < c.seed.records)) {
    for (const cursor of cursors) {
      const { seed } = cursor;
      if (cursor.written >= seed.records) continue;
      const partitions = lab.topics.find((t) => t.name === seed.topic)!.partitions;
      const size = Math.min(seed.transactionSize, seed.records - cursor.written);
      cursor.txn++;
      // The last transaction always commits, so every partition ends with committed data.
      const last = cursor.written + size >= seed.records;
      const info = { ordinal: cursor.txn, committed: last || (cursor.txn + cursor.phase) % seed.abortEvery !== 0 };
      const records: SeedRecord[] = [];
      for (let i = 0; i < size; i++) {
        const keyIndex = (cursor.written + i) % seed.keys;
        const key = `k${String(keyIndex).padStart(3, '0')}`;
        const value = seed.value ? seed.value(index, key, info) : defaultValue(index, key);
        records.push({ topic: seed.topic, partition: keyIndex % partitions, key, value, index });
        index++;
      }
      cursor.written += size;
      const hold = seed.holdOpen;
      const held = hold !== undefined && !cursor.heldOne && (hold.transaction === 'first-aborted' ? !info.committed : hold.transaction === cursor.txn);
      if (held) cursor.heldOne = true;
      transactions.push({ records, commit: info.committed, ...(held ? { holdMs: hold.holdMs } : {}) });
    }
  }
  return transactions;
}

/** Splits the seeding transactions into n waves of about equal size. */
export function splitIntoWaves(transactions: SeedTransaction[], waves: number): SeedTransaction[][] {
  const result: SeedTransaction[][] = Array.from({ length: Math.max(1, waves) }, () => []);
  const per = Math.ceil(transactions.length / result.length);
  transactions.forEach((txn, i) => result[Math.min(result.length - 1, Math.floor(i / per))]!.push(txn));
  return result.filter((w) => w.length > 0);
}

/**
 * Coordinator errors that reject a request before it has any effect, a connection that was never
 * made, and a coordinator kafkajs could not find (its commit looks the coordinator up right before
 * it sends EndTxn, so none was sent): after these the transaction is still open, so fencing aborts
 * it and a retry cannot duplicate anything. (A connection lost mid-request leaves the outcome
 * unknown: not retried.)
 */
const REJECTED_UNSENT = /NOT_COORDINATOR|COORDINATOR_NOT_AVAILABLE|LOAD_IN_PROGRESS|CONCURRENT_TRANSACTIONS|ECONNREFUSED|Failed to find group coordinator/;

function errorTypes(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as { type?: string; code?: string; message?: string; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    parts.push(`${e.type ?? ''} ${e.code ?? ''} ${e.message ?? ''}`);
  }
  return parts.join(' ');
}

/** How many producers the seeding transactions take turns over (see InputWriter). */
const SEEDING_PRODUCERS = 3;

interface HeldTransaction {
  /** Ends it now instead of when its time is up (the attempt is shutting down). */
  endNow(): void;
  ended: Promise<void>;
}

/**
 * Writes seeding transactions with the grader's own transactional producers and records the
 * offset of every record, which the verifier and the progress meter need. On the 3-node cluster
 * the transaction coordinator moves (a coordinator-kill fault, possibly another attempt's), so a
 * transaction that fails before its outcome could be decided is written again with a fresh
 * producer, whose fencing aborts the failed one first.
 */
export class InputWriter {
  /**
   * Transactions take turns over these producers (ids `<id>`, `<id>-2`, ...). A transaction begun
   * on the producer whose last one ended a moment ago finds that one's markers still being written:
   * the broker answers CONCURRENT_TRANSACTIONS and kafkajs asks again 100 ms later, so one
   * producer wrote a wave of two transactions in about 200 ms; in turns, in about 10.
   */
  private readonly producers;
  private turn = 0;
  readonly written: SeededRecord[] = [];
  private readonly held: HeldTransaction[] = [];
  private oneLeader = false;

  /**
   * `lease` keeps the cluster from being restarted while a held transaction is open (the
   * attempt's maintenance lock); it is called from inside write(), under the caller's lease.
   */
  constructor(
    private readonly kafka: Kafka,
    private readonly transactionalId: string,
    private readonly realTopic: (logical: string) => string,
    private readonly lease: <T>(fn: () => Promise<T>) => Promise<T> = (fn) => fn(),
  ) {
    this.producers = Array.from({ length: SEEDING_PRODUCERS }, (_, i) => this.newProducer(this.turnId(i)));
  }

  private turnId(turn: number): string {
    return turn === 0 ? this.transactionalId : `${this.transactionalId}-${turn + 1}`;
  }

  private newProducer(transactionalId = this.transactionalId) {
    return this.kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  }

  /**
   * `oneLeader`: every partition has the same leader (a teaching cluster of one node), so a
   * transaction's records go in one request (see sendAll).
   */
  async connect(options: { oneLeader?: boolean } = {}): Promise<void> {
    this.oneLeader = options.oneLeader ?? false;
    await Promise.all(this.producers.map((producer) => producer.connect()));
  }

  async write(transactions: SeedTransaction[]): Promise<void> {
    for (const txn of transactions) {
      if (txn.holdMs) {
        await this.holdOpen(txn, txn.holdMs);
        continue;
      }
      await retry(() => this.writeOne(txn), { retries: 8, minDelayMs: 250, maxDelayMs: 2_000, shouldRetry: isRetriableKafkaError });
    }
  }

  /**
   * Begins the transaction with a producer of its own, writes its records and returns: later
   * transactions commit around it until holdMs is up, then it commits or aborts as planned.
   */
  private async holdOpen(txn: SeedTransaction, holdMs: number): Promise<void> {
    const producer = this.newProducer(`${this.transactionalId}-held-${this.held.length + 1}`);
    await producer.connect();
    const transaction = await producer.transaction();
    this.recordOffsets(txn, await this.sendAll(transaction, txn));
    let endNow = () => {};
    const due = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, holdMs);
      endNow = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    const ended = this.lease(() => due.then(() => (txn.commit ? transaction.commit() : transaction.abort()))).finally(() =>
      bestEffort('disconnect the producer of a held seeding transaction', () => producer.disconnect()),
    );
    ended.catch(() => {
      // Seen by settled(); until then a failure must not surface as an unhandled rejection.
    });
    this.held.push({ endNow, ended });
  }

  /** Resolves once every held transaction has ended (its planned outcome written). */
  async settled(): Promise<void> {
    await Promise.all(this.held.map((h) => h.ended));
  }

  private async sendAll(transaction: Transaction, txn: SeedTransaction): Promise<RecordMetadata[]> {
    const batches = [...groupByTopic(txn.records)].map(([topic, records]) => ({ topic: this.realTopic(topic), messages: records.map((r) => ({ key: r.key, value: r.value, partition: r.partition })) }));
    // One leader: the whole transaction in one Produce request (and one AddPartitionsToTxn), not
    // one of each per partition; a retry goes to that leader alone all the same.
    if (this.oneLeader) return transaction.sendBatch({ topicMessages: batches });
    const results: RecordMetadata[] = [];
    // Several leaders: one request per partition, one after the other. kafkajs sends a batch that
    // spans several leaders as parallel requests and retries them together, and on the 3-node
    // cluster that duplicated records (tests/three-node.test.ts counts it). One leader per request
    // keeps every retry to that leader.
    for (const { topic, messages } of batches) {
      for (const partition of [...new Set(messages.map((m) => m.partition))]) {
        results.push(...(await transaction.send({ topic, messages: messages.filter((m) => m.partition === partition) })));
      }
    }
    return results;
  }

  private recordOffsets(txn: SeedTransaction, results: RecordMetadata[]): void {
    for (const [topic, records] of groupByTopic(txn.records)) {
      const perPartition = new Map<number, number>();
      for (const r of records) {
        const meta = results.find((m) => m.topicName === this.realTopic(topic) && m.partition === r.partition);
        const seen = perPartition.get(r.partition) ?? 0;
        perPartition.set(r.partition, seen + 1);
        this.written.push({ ...r, committed: txn.commit, offset: Number(meta?.baseOffset ?? -1) + seen });
      }
    }
  }

  private async writeOne(txn: SeedTransaction): Promise<void> {
    const turn = this.turn;
    this.turn = (turn + 1) % this.producers.length;
    let results: RecordMetadata[];
    let ending = false;
    try {
      const transaction = await this.producers[turn]!.transaction();
      results = await this.sendAll(transaction, txn);
      ending = true;
      if (txn.commit) await transaction.commit();
      else await transaction.abort();
    } catch (err) {
      // kafkajs cannot go on with a producer whose transaction call failed: start a fresh one.
      await bestEffort('disconnect a failed seeding producer', () => this.producers[turn]!.disconnect());
      const fresh = this.newProducer(this.turnId(turn));
      this.producers[turn] = fresh;
      await fresh.connect();
      const safe = !ending || !txn.commit || REJECTED_UNSENT.test(errorTypes(err));
      const failed = new KafkaIqError('BROKER_UNREACHABLE', `The grader could not write a seeding transaction (${describeError(err)}).`, { cause: err });
      throw Object.assign(failed, { retriable: safe });
    }
    this.recordOffsets(txn, results);
  }

  async disconnect(): Promise<void> {
    for (const h of this.held) h.endNow();
    await Promise.all(this.held.map((h) => h.ended.catch(() => {
      // Shutting down: settled() is where a held transaction's failure counts.
    })));
    for (const producer of this.producers) await bestEffort('disconnect a seeding producer', () => producer.disconnect());
  }
}
