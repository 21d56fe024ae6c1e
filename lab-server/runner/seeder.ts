import type { Kafka } from 'kafkajs';
import type { LabDefinition, SeedRecord } from '../../src/shared/lab.ts';

export interface SeededRecord extends SeedRecord {
  committed: boolean;
  /** Offset in the real topic, known once written. */
  offset: number;
}

export interface SeedTransaction {
  records: SeedRecord[];
  commit: boolean;
}

const WORDS = ['amber', 'basil', 'cedar', 'delta', 'ember', 'fjord', 'grove', 'harbor', 'island', 'juniper', 'kelp', 'lagoon'];

const defaultValue = (index: number, key: string) =>
  `rec-${String(index).padStart(5, '0')} ${key} ${WORDS[index % WORDS.length]} ${WORDS[(index * 7 + 3) % WORDS.length]}`;

/**
 * The input of a lab run, decided before anything is written: which records, which partition
 * (a key always maps to the same partition) and which seeding transactions are aborted.
 */
export function planSeedTransactions(lab: LabDefinition): SeedTransaction[] {
  const transactions: SeedTransaction[] = [];
  let index = 0;
  // Interleave the seeds (fan-in labs have two inputs) one transaction at a time.
  const cursors = lab.seeds.map((seed) => ({ seed, written: 0, txn: 0 }));
  while (cursors.some((c) => c.written < c.seed.records)) {
    for (const cursor of cursors) {
      const { seed } = cursor;
      if (cursor.written >= seed.records) continue;
      const partitions = lab.topics.find((t) => t.name === seed.topic)!.partitions;
      const size = Math.min(seed.transactionSize, seed.records - cursor.written);
      const records: SeedRecord[] = [];
      for (let i = 0; i < size; i++) {
        const keyIndex = (cursor.written + i) % seed.keys;
        const key = `k${String(keyIndex).padStart(3, '0')}`;
        records.push({ topic: seed.topic, partition: keyIndex % partitions, key, value: (seed.value ?? defaultValue)(index, key), index });
        index++;
      }
      cursor.written += size;
      cursor.txn++;
      // The last transaction always commits, so every partition ends with committed data.
      const last = cursor.written >= seed.records;
      transactions.push({ records, commit: last || cursor.txn % seed.abortEvery !== 0 });
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
 * Writes seeding transactions with the grader's own transactional producer and records the
 * offset of every record, which the verifier and the progress meter need.
 */
export class InputWriter {
  private producer;
  readonly written: SeededRecord[] = [];

  constructor(
    kafka: Kafka,
    transactionalId: string,
    private readonly realTopic: (logical: string) => string,
  ) {
    this.producer = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
  }

  async connect(): Promise<void> {
    await this.producer.connect();
  }

  async write(transactions: SeedTransaction[]): Promise<void> {
    for (const txn of transactions) {
      const transaction = await this.producer.transaction();
      const byTopic = new Map<string, SeedRecord[]>();
      for (const r of txn.records) byTopic.set(r.topic, [...(byTopic.get(r.topic) ?? []), r]);
      const results = await transaction.sendBatch({
        topicMessages: [...byTopic].map(([topic, records]) => ({
          topic: this.realTopic(topic),
          messages: records.map((r) => ({ key: r.key, value: r.value, partition: r.partition })),
        })),
      });
      if (txn.commit) await transaction.commit();
      else await transaction.abort();
      for (const [topic, records] of byTopic) {
        const perPartition = new Map<number, number>();
        for (const r of records) {
          const meta = results.find((m) => m.topicName === this.realTopic(topic) && m.partition === r.partition);
          const seen = perPartition.get(r.partition) ?? 0;
          perPartition.set(r.partition, seen + 1);
          this.written.push({ ...r, committed: txn.commit, offset: Number(meta?.baseOffset ?? -1) + seen });
        }
      }
    }
  }

  async disconnect(): Promise<void> {
    await this.producer.disconnect().catch(() => {});
  }
}
