/**
 * The coordinator's log of an attempt's transactional ids (__transaction_state, decoded by
 * kafka/transaction-log.ts), for the check no-transaction-timeouts (checkers/no-transaction-timeouts.ts).
 */
import type { Admin, Kafka } from 'kafkajs';
import { retry } from '../../core/retry.ts';
import { GRADER_KAFKA_RETRY } from '../../kafka/group-offsets.ts';
import { decodeTransactionLogRecord, TRANSACTION_STATE_TOPIC, type TransactionLogValue } from '../../kafka/transaction-log.ts';

/**
 * Remembers where __transaction_state ended when the grade started; after the run, reads from
 * there and decides the check.
 */
/**
 * The transaction log's end offsets. kafkajs's admin gives up on the first refused connection, and
 * on a 3-node cluster a node may just have been killed (its partitions not yet moved): retried.
 */
function offsetsOfTransactionLog(admin: Admin) {
  return retry(() => admin.fetchTopicOffsets(TRANSACTION_STATE_TOPIC), GRADER_KAFKA_RETRY);
}

export class TransactionTimeoutWatch {
  private constructor(
    private readonly kafka: Kafka,
    private readonly namespace: string,
    private readonly from: { partition: number; offset: string }[],
  ) {}

  static async start(kafka: Kafka, namespace: string): Promise<TransactionTimeoutWatch> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const offsets = await offsetsOfTransactionLog(admin);
      return new TransactionTimeoutWatch(kafka, namespace, offsets.map((p) => ({ partition: p.partition, offset: p.high })));
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  /** Every log value of this attempt's transactional ids written since start(), by id, in order. */
  async read(timeoutMs = 15_000): Promise<Map<string, TransactionLogValue[]>> {
    const byId = new Map<string, TransactionLogValue[]>();
    const admin = this.kafka.admin();
    await admin.connect();
    let ends: { partition: number; high: string }[];
    try {
      ends = await offsetsOfTransactionLog(admin);
    } finally {
      await admin.disconnect().catch(() => {});
    }
    const from = new Map(this.from.map((p) => [p.partition, Number(p.offset)]));
    const remaining = new Map(ends.filter((e) => Number(e.high) > (from.get(e.partition) ?? 0)).map((e) => [e.partition, Number(e.high)]));
    if (remaining.size === 0) return byId;
    const groupId = `${this.namespace}-txn-log-reader`;
    const consumer = this.kafka.consumer({ groupId, maxWaitTimeInMs: 100, sessionTimeout: 6_000, heartbeatInterval: 1_000 });
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    const reached = (partition: number, next: number) => {
      const end = remaining.get(partition);
      if (end !== undefined && next >= end) remaining.delete(partition);
      if (remaining.size === 0) done();
    };
    // Batches of control records or of other ids still move the position.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => reached(payload.partition, Number(payload.lastOffset) + 1));
    try {
      await consumer.connect();
      await consumer.subscribe({ topic: TRANSACTION_STATE_TOPIC, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          let record;
          try {
            record = decodeTransactionLogRecord(message.key, message.value);
          } catch {
            return; // a record type the decoder does not know: not ours
          }
          if (!record?.value || !record.transactionalId.startsWith(`${this.namespace}-`)) return;
          byId.set(record.transactionalId, [...(byId.get(record.transactionalId) ?? []), record.value]);
        },
      });
      for (const p of ends) consumer.seek({ topic: TRANSACTION_STATE_TOPIC, partition: p.partition, offset: String(from.get(p.partition) ?? 0) });
      await Promise.race([finished, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
    } finally {
      await consumer.disconnect().catch(() => {});
      const cleanup = this.kafka.admin();
      await cleanup.connect().then(() => cleanup.deleteGroups([groupId])).catch(() => {});
      await cleanup.disconnect().catch(() => {});
    }
    if (remaining.size) throw new Error(`could not read ${TRANSACTION_STATE_TOPIC} to its end within ${timeoutMs / 1000} s`);
    return byId;
  }

  /** The attempt's part of the coordinator's log since the start, for checkTransactionTimeouts; an error if it cannot be read. */
  async readLog(): Promise<{ byId: Map<string, TransactionLogValue[]> } | { error: string }> {
    try {
      return { byId: await this.read() };
    } catch (err) {
      return { error: (err as Error).message };
    }
  }
}
